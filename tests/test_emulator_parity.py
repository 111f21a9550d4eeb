"""What the emulator must compute as the GPU does: carry chains that mix additions and
subtractions, 128-bit integers and registers, fresh memory, the PTX a driver refuses, and
device printf. Each test runs on the active backend (the GPU suite runs them on a GPU,
where the results must be the same)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
from conftest import poison

pytestmark = pytest.mark.gpu

M32, M64, M128 = 2**32 - 1, 2**64 - 1, 2**128 - 1


# ------------------------------------------------------------------ carry chains

# One lane's carry flag through chains that mix additions and subtractions. On the GPU
# sub.cc computes a + ~b + 1 and leaves that sum's carry (1 means no borrow); subc
# computes a + ~b + CF; addc and madc add CF.
CARRY = r"""
extern "C" __global__ void chains(const unsigned* a, const unsigned* b, const unsigned* c,
                                  const unsigned long long* A, const unsigned long long* B,
                                  unsigned* o, unsigned long long* O, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i], z = c[i], r0, r1, r2, r3, r4, r5, r6, r7;
    asm("sub.cc.u32 %0, %2, %3;\n\taddc.u32 %1, %4, %4;"
        : "=r"(r0), "=r"(r1) : "r"(x), "r"(y), "r"(z));
    asm("add.cc.u32 %0, %2, %3;\n\tsubc.u32 %1, %4, %3;"
        : "=r"(r2), "=r"(r3) : "r"(x), "r"(y), "r"(z));
    asm("sub.cc.u32 %0, %2, %3;\n\tmadc.lo.u32 %1, %2, %3, %4;"
        : "=r"(r4), "=r"(r5) : "r"(x), "r"(y), "r"(z));
    asm("sub.cc.u32 %0, %2, %3;\n\tsubc.cc.u32 %1, %3, %4;\n\taddc.u32 %1, %1, 0;"
        : "=r"(r6), "=r"(r7) : "r"(x), "r"(y), "r"(z));
    unsigned* p = o + 8 * i;
    p[0] = r0; p[1] = r1; p[2] = r2; p[3] = r3; p[4] = r4; p[5] = r5; p[6] = r6; p[7] = r7;
    unsigned long long X = A[i], Y = B[i], s0, s1, s2, s3;
    asm("sub.cc.u64 %0, %2, %3;\n\taddc.u64 %1, %2, %3;" : "=l"(s0), "=l"(s1) : "l"(X), "l"(Y));
    asm("add.cc.u64 %0, %2, %3;\n\tsubc.u64 %1, %3, %2;" : "=l"(s2), "=l"(s3) : "l"(X), "l"(Y));
    O[4 * i] = s0; O[4 * i + 1] = s1; O[4 * i + 2] = s2; O[4 * i + 3] = s3;
}
"""


def carry_model(x, y, z, X, Y):
    """The chains of CARRY on Python integers, as the GPU computes them."""
    def sub(p, q, cin, m):  # p + ~q + cin: the result and the carry out
        t = p + (~q & m) + cin
        return t & m, t >> (m.bit_length())

    r0, cf = sub(x, y, 1, M32)
    r1 = (z + z + cf) & M32
    t = x + y
    r2, cf = t & M32, t >> 32
    r3, _ = sub(z, y, cf, M32)
    r4, cf = sub(x, y, 1, M32)
    r5 = (x * y + z + cf) & M32
    r6, cf = sub(x, y, 1, M32)
    r7, cf = sub(y, z, cf, M32)
    r7 = (r7 + cf) & M32
    s0, cf = sub(X, Y, 1, M64)
    s1 = (X + Y + cf) & M64
    t = X + Y
    s2, cf = t & M64, t >> 64
    s3, _ = sub(Y, X, cf, M64)
    return [r0, r1, r2, r3, r4, r5, r6, r7], [s0, s1, s2, s3]


def test_carry_of_subtractions_read_by_additions_and_back(rng):
    mod = cukit.compile(CARRY, name="carry.cu")
    n = 2048
    a, b, c = (rng.integers(0, 2**32, n, dtype=np.uint32) for _ in range(3))
    b[::5] = a[::5]              # equal operands: no borrow
    c[1::7] = b[1::7]
    A, B = (rng.integers(0, 2**64, n, dtype=np.uint64) for _ in range(2))
    B[::6] = A[::6]
    B[1::9] = ~A[1::9]           # additions that reach all ones
    o = cukit.to_device(poison(8 * n, np.uint32))
    O = cukit.to_device(poison(4 * n, np.uint64))
    dev = cukit.to_device
    mod.chains(dev(a), dev(b), dev(c), dev(A), dev(B), o, O, np.int32(n), grid=8, block=256)
    got32, got64 = o.get().reshape(n, 8), O.get().reshape(n, 4)
    want = [carry_model(int(a[i]), int(b[i]), int(c[i]), int(A[i]), int(B[i])) for i in range(n)]
    np.testing.assert_array_equal(got32, np.array([w[0] for w in want], np.uint32))
    np.testing.assert_array_equal(got64, np.array([w[1] for w in want], np.uint64))


INT128 = r"""
extern "C" __global__ void divide(const unsigned long long* a, const unsigned long long* b,
                                  unsigned long long* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned __int128 x = ((unsigned __int128)a[2 * i + 1] << 64) | a[2 * i];
    unsigned __int128 y = ((unsigned __int128)b[2 * i + 1] << 64) | b[2 * i];
    __int128 sx = (__int128)x, sy = (__int128)y;
    unsigned __int128 r[6] = {x / y, x % y, (unsigned __int128)(sx / sy),
                              (unsigned __int128)(sx % sy), x * y, x - y};
    for (int k = 0; k < 6; k++) {
        out[12 * i + 2 * k] = (unsigned long long)r[k];
        out[12 * i + 2 * k + 1] = (unsigned long long)(r[k] >> 64);
    }
}
"""


def int128_model(x, y):
    sx = x - (1 << 128) if x >> 127 else x
    sy = y - (1 << 128) if y >> 127 else y
    sq = abs(sx) // abs(sy) * (1 if (sx < 0) == (sy < 0) else -1)  # C truncates
    return [x // y, x % y, sq & M128, (sx - sq * sy) & M128, (x * y) & M128, (x - y) & M128]


def test_nvrtc_int128_division_and_modulo_are_exact(rng):
    """NVRTC's own code for __int128 division mixes sub.cc with addc: every quotient and
    remainder, signed and unsigned, equals Python's."""
    mod = cukit.compile(INT128, name="int128.cu", options=["--device-int128"])
    n = 512
    a = rng.integers(0, 2**64, 2 * n, dtype=np.uint64)
    b = rng.integers(0, 2**64, 2 * n, dtype=np.uint64)
    b[1::4] = 0                                  # 64-bit divisors
    b[2::8] >>= np.uint64(50)                    # divisors just over 64 bits
    b[3::8] = rng.integers(1, 1000, len(b[3::8]), dtype=np.uint64)  # tiny high words
    b[5::16], b[4::16] = 0, rng.integers(1, 100, len(b[4::16]), dtype=np.uint64)
    a[6::16], b[6::16] = b[6::16], b[6::16]      # x == y: quotient 1, remainder 0
    out = cukit.to_device(poison(12 * n, np.uint64))
    mod.divide(cukit.to_device(a), cukit.to_device(b), out, np.int32(n), grid=2, block=256)
    got = out.get().reshape(n, 6, 2)
    got = [[int(lo) | int(hi) << 64 for lo, hi in row] for row in got]
    want = []
    for i in range(n):
        x = int(a[2 * i]) | int(a[2 * i + 1]) << 64
        y = int(b[2 * i]) | int(b[2 * i + 1]) << 64
        want.append(int128_model(x, y))
    bad = [(i, k) for i in range(n) for k in range(6) if got[i][k] != want[i][k]]
    assert not bad, f"{len(bad)} of {6 * n} differ, first {bad[:5]}"


# ------------------------------------------------------------------ .b128 registers

B128 = r"""
extern "C" __global__ void b128(const unsigned long long* a, unsigned long long* o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long lo = a[2 * i], hi = a[2 * i + 1], x, y, u, v;
    asm("{\n\t.reg .b128 q, r;\n\t"
        "mov.b128 q, {%4, %5};\n\t"        // pack: lo is the low half
        "mov.b128 r, q;\n\t"               // copy
        "mov.b128 {%0, %1}, r;\n\t"        // unpack
        "mov.b128 q, {%5, %4};\n\t"        // the halves swapped, into the same register
        "mov.b128 {%2, %3}, q;\n\t}"
        : "=l"(x), "=l"(y), "=l"(u), "=l"(v) : "l"(lo), "l"(hi));
    unsigned long long* p = o + 4 * i;
    p[0] = x; p[1] = y; p[2] = u; p[3] = v;
}
"""


def test_b128_registers_pack_copy_and_unpack(rng):
    mod = cukit.compile(B128, name="b128.cu")
    n = 1000
    a = rng.integers(0, 2**64, 2 * n, dtype=np.uint64)
    o = cukit.to_device(poison(4 * n, np.uint64))
    mod.b128(cukit.to_device(a), o, np.int32(n), grid=4, block=256)
    got = o.get().reshape(n, 4)
    lo, hi = a[0::2], a[1::2]
    np.testing.assert_array_equal(got, np.stack([lo, hi, hi, lo], axis=1))


@pytest.mark.parametrize("inst", ["mul.hi.b128 q, q, q;", "add.b128 q, q, q;",
                                  "mov.b128 q, {%0, %0, %0, %0};", "mov.b128 %0, q;"])
def test_invalid_b128_forms_are_refused_as_invalid_ptx(inst):
    src = ('extern "C" __global__ void k(unsigned long long* p) {\n'
           '    unsigned long long x = *p;\n'
           '    asm volatile("{ .reg .b128 q; mov.b128 q, {%0, %0}; ' + inst + ' }" : "+l"(x));\n'
           '    *p = x;\n'
           '}\n')
    # refused as invalid PTX: by ptxas where NVRTC makes the GPU's code, else at the load
    with pytest.raises((cukit.CudaError, cukit.CompileError), match="INVALID_PTX|ptxas"):
        cukit.compile(src, name="b128bad.cu")


# ------------------------------------------------------------------ fresh memory

def run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ))


def test_fresh_memory_reads_as_zero_in_a_fresh_process():
    """Memory a process allocates first reads as zero, at every size (an H100's did), so
    a kernel that atomically adds into a buffer it never cleared gets the sum."""
    r = run('''
        import numpy as np, cukit
        for n in (1, 100, 1024, 5000, 65536, 1 << 20, 64 << 20):
            a = cukit.empty(n, np.uint8)
            print(n, int(np.count_nonzero(a.get())))
        mod = cukit.compile(r"""
        extern "C" __global__ void dot(const float* x, const float* y, float* out, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) atomicAdd(out, x[i] * y[i]);
        }""")
        x = np.arange(1, 257, dtype=np.float32)
        out = cukit.empty(1, np.float32)
        mod.dot(cukit.to_device(x), cukit.to_device(x), out, 256, grid=1, block=256)
        print("dot", out.get()[0], float((x.astype(np.float64) ** 2).sum()))
    ''')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [line.split()[1] for line in lines[:7]] == ["0"] * 7, r.stdout
    _, got, want = lines[7].split()
    assert float(got) == float(want)


# ------------------------------------------------------------------ PTX a driver refuses

PTX = """.version 9.0
.target sm_90
.address_size 64

.visible .entry k(.param .u64 p0, .param .u32 p1)
{
  .reg .b64 %rd<3>;
  .reg .b32 %r<3>;
  ld.param.u64 %rd1, [p0];
  ld.param.u32 %r1, [p1];
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}
"""
ENTRY = PTX[PTX.index(".visible"):]


def test_the_ptx_the_refusals_start_from_runs(rng):
    k = cukit.Module.load(PTX.encode()).get_kernel("k", signature="(unsigned* p, unsigned v)")
    out = cukit.to_device(poison(1, np.uint32))
    v = int(rng.integers(0, 2**32))
    k(out, v, grid=1, block=1)
    assert out.get()[0] == v


@pytest.mark.parametrize("change", [
    (".version 9.0", ".version 1.0"),
    (".target sm_90\n", ""),
    (".address_size 64", ".address_size 32"),
    (ENTRY, ENTRY + ENTRY),                                          # two .entry k
    (".visible", ".global .u32 g;\n.global .u32 g;\n.visible"),      # two .global g
], ids=["version-1.0", "no-target", "address-size-32", "two-entries", "two-globals"])
def test_ptx_a_driver_refuses_is_refused_with_its_error(change):
    ptx = PTX.replace(*change)
    assert ptx != PTX
    with pytest.raises(cukit.CudaError) as info:
        cukit.Module.load(ptx.encode())
    # the driver's error for PTX it refuses: no subclass (not "not supported", not a fault)
    assert type(info.value) is cukit.CudaError, repr(info.value)


@pytest.mark.parametrize("change", [
    (".target sm_90", ".target sm_20"),   # an H100's driver compiles it for the GPU
    ("[p1]", "[p0+2]"),                   # a misaligned ld.param: an H100's driver loads it
], ids=["sm_20", "misaligned-param"])
def test_ptx_a_driver_loads_is_loaded(change):
    ptx = PTX.replace(*change)
    assert ptx != PTX
    cukit.Module.load(ptx.encode())


def test_ptx_without_a_version_is_not_ptx():
    with pytest.raises(ValueError, match="not a cubin, fatbin or PTX"):
        cukit.Module.load(PTX.replace(".version 9.0\n", "").encode())


FILE_SHARED = r"""
__shared__ int tile[64];
__device__ __noinline__ int fill_and_sum(const int* x) {
    tile[threadIdx.x] = x[blockIdx.x * 64 + threadIdx.x];
    __syncthreads();
    int s = 0;
    for (int k = 0; k < 64; k++) s += tile[k] * (k + 1);
    __syncthreads();
    return s;
}
extern "C" __global__ void a(const int* x, int* out) {
    int s = fill_and_sum(x);
    out[blockIdx.x * 64 + threadIdx.x] = s + tile[threadIdx.x ^ 1];
}
extern "C" __global__ void b(const int* x, int* out) {
    __shared__ int mine[8];
    mine[threadIdx.x & 7] = 1;
    out[blockIdx.x * 64 + threadIdx.x] = fill_and_sum(x) * 2 + mine[0];
}
"""


def test_a_file_scope_shared_array_used_by_a_noinline_function_of_two_kernels(rng):
    """NVRTC keeps such an array at module scope (.shared outside every function): each
    block of each kernel has its own."""
    mod = cukit.compile(FILE_SHARED, name="file_shared.cu")
    x = rng.integers(-100, 100, 8 * 64).astype(np.int32)
    out = cukit.to_device(poison(8 * 64, np.int32))
    mod.a(cukit.to_device(x), out, grid=8, block=64)
    xs = x.reshape(8, 64)
    w = (xs * np.arange(1, 65)).sum(1)
    np.testing.assert_array_equal(out.get().reshape(8, 64), w[:, None] + xs[:, np.arange(64) ^ 1])
    out = cukit.to_device(poison(8 * 64, np.int32))
    mod.b(cukit.to_device(x), out, grid=8, block=64)
    np.testing.assert_array_equal(out.get().reshape(8, 64), np.repeat(w[:, None] * 2 + 1, 64, 1))


# ------------------------------------------------------------------ device printf

PRINTF = r"""
extern "C" __global__ void lengths(int a, int b) {
    printf("%hd %hu %hhd %hhu %hx %hhx %hi %ho|%d %u\n", a, a, a, a, a, b, b, b, a, b);
}
extern "C" __global__ void strings(const char* s, int n) {
    printf("[%s]\n", s);
    printf("[%.5s][%12s][%-12s|][%*s]\n", s, "right", "left", n, "star");
}
extern "C" __global__ void long_line(const char* s) {
    printf("%s%s%s|end\n", s, s, s);
    printf("next line %d\n", 7);
}
extern "C" __global__ void pointers(const int* p) {
    printf("[%20p][%-20p][%p]\n", p, p, (const void*)0);
}
"""


def printed(capfd, launch):
    cukit.synchronize()
    capfd.readouterr()
    launch()
    cukit.synchronize()
    return capfd.readouterr().out


@pytest.mark.skipif(cukit.backend() == "gpu", reason="an H100's printf prints another number "
                    "than C's for %hi and %ho and reads the arguments after them from the wrong "
                    "place (docs/guide/emulator.md); the emulator prints C's")
@pytest.mark.parametrize("a, b", [(70000, 300), (-70000, -1), (65535, 255), (-129, 128)])
def test_printf_length_modifiers_h_and_hh_as_c(capfd, a, b):
    mod = cukit.compile(PRINTF, name="printf.cu")
    out = printed(capfd, lambda: mod.lengths(a, b, grid=1, block=1))

    def c(v, bits, signed):  # C's conversion of an int to a narrower type
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    want = (f"{c(a, 16, 1)} {c(a, 16, 0)} {c(a, 8, 1)} {c(a, 8, 0)} {c(a, 16, 0):x} "
            f"{c(b, 8, 0):x} {c(b, 16, 1)} {c(b, 16, 0):o}|{a} {c(b, 32, 0)}\n")
    assert out == want


def test_printf_strings_whole_with_c_widths_and_precisions(capfd, rng):
    text = "".join(chr(c) for c in rng.integers(ord("a"), ord("z") + 1, 1000))
    s = cukit.to_device(np.frombuffer(text.encode() + b"\0", np.uint8))
    mod = cukit.compile(PRINTF, name="printf.cu")
    out = printed(capfd, lambda: mod.strings(s, -9, grid=1, block=1))
    assert out == f"[{text}]\n[{text[:5]}][{'right':>12}][{'left':<12}|][{'star':<9}]\n"


def test_printf_past_4095_characters_keeps_its_newline(capfd, rng):
    text = "".join(chr(c) for c in rng.integers(ord("A"), ord("Z") + 1, 1500))
    s = cukit.to_device(np.frombuffer(text.encode() + b"\0", np.uint8))
    mod = cukit.compile(PRINTF, name="printf.cu")
    out = printed(capfd, lambda: mod.long_line(s, grid=1, block=1))
    assert out == text * 3 + "|end\nnext line 7\n"


def test_printf_pointer_width(capfd):
    p = cukit.empty(4, np.int32)
    mod = cukit.compile(PRINTF, name="printf.cu")
    out = printed(capfd, lambda: mod.pointers(p, grid=1, block=1))
    hexp = f"0x{int(p.ptr):x}"
    assert out.startswith(f"[{hexp:>20}][{hexp:<20}][")


# ------------------------------------------------------------------ progress between blocks

BLOCKS = r"""
extern "C" __global__ void wait_for_last(volatile int* flag, int* out) {
    // block 0 spins on a flag the grid's last block sets: a GPU runs both at once
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (flag[0] == 0) { }
        out[0] = flag[0] + 1;
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
        __threadfence();
        flag[0] = 41;
    }
}
extern "C" __global__ void chained_scan(const int* x, int* out, int* ticket,
                                        volatile int* ready, volatile int* prefix) {
    // a single-pass scan: each block waits for the one before it in ticket order
    __shared__ int id, base, part[128];
    if (threadIdx.x == 0) id = atomicAdd(ticket, 1);
    __syncthreads();
    int i = id * 128 + threadIdx.x;
    part[threadIdx.x] = x[i];
    __syncthreads();
    for (int d = 1; d < 128; d *= 2) {
        int v = threadIdx.x >= d ? part[threadIdx.x - d] : 0;
        __syncthreads();
        part[threadIdx.x] += v;
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        int before = 0;
        if (id > 0) {
            while (ready[id - 1] == 0) { }
            before = prefix[id - 1];
        }
        prefix[id] = before + part[127];
        __threadfence();
        ready[id] = 1;
        base = before;
    }
    __syncthreads();
    out[i] = base + part[threadIdx.x];
}
"""


@pytest.mark.parametrize("grid", [2, 64, 300])
def test_a_block_waiting_for_a_later_block_makes_progress(grid):
    mod = cukit.compile(BLOCKS, name="blocks.cu")
    flag, out = cukit.zeros(1, np.int32), cukit.to_device(poison(1, np.int32))
    mod.wait_for_last(flag, out, grid=grid, block=64)
    assert out.get()[0] == 42


def test_a_single_pass_scan_whose_blocks_wait_for_each_other(rng):
    mod = cukit.compile(BLOCKS, name="blocks.cu")
    nblocks = 400
    x = rng.integers(-1000, 1000, nblocks * 128).astype(np.int32)
    out = cukit.to_device(poison(x.size, np.int32))
    ticket, ready, prefix = (cukit.zeros(n, np.int32) for n in (1, nblocks, nblocks))
    mod.chained_scan(cukit.to_device(x), out, ticket, ready, prefix, grid=nblocks, block=128)
    np.testing.assert_array_equal(out.get(), np.cumsum(x).astype(np.int32))


# ------------------------------------------------------------------ contraction

CONTRACT = r"""
extern "C" __global__ void contract(const float* x, const float* y, const float* z, float* o,
                                    const double* X, const double* Y, const double* Z,
                                    double* O, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i], c = z[i], p, r0, r1, r2, r3;
    // mul and add without a rounding modifier: ptxas fuses them into one fma
    asm("{ .reg .f32 t; mul.f32 t, %1, %2; add.f32 %0, t, %3; }" : "=f"(r0) : "f"(a), "f"(b), "f"(c));
    asm("{ .reg .f32 t; mul.f32 t, %1, %2; sub.f32 %0, t, %3; }" : "=f"(r1) : "f"(a), "f"(b), "f"(c));
    asm("{ .reg .f32 t; mul.f32 t, %1, %2; sub.f32 %0, %3, t; }" : "=f"(r2) : "f"(a), "f"(b), "f"(c));
    // .rn on either: never fused
    asm("{ .reg .f32 t; mul.rn.f32 t, %1, %2; add.f32 %0, t, %3; }" : "=f"(r3) : "f"(a), "f"(b), "f"(c));
    o[4 * i] = r0; o[4 * i + 1] = r1; o[4 * i + 2] = r2; o[4 * i + 3] = r3;
    double A = X[i], B = Y[i], C = Z[i], s0, s1, s2;
    asm("{ .reg .f64 t; mul.f64 t, %1, %2; add.f64 %0, %3, t; }" : "=d"(s0) : "d"(A), "d"(B), "d"(C));
    asm("{ .reg .f64 t; mul.f64 t, %1, %2; sub.f64 %0, t, %3; }" : "=d"(s1) : "d"(A), "d"(B), "d"(C));
    asm("{ .reg .f64 t; mul.f64 t, %1, %2; add.rn.f64 %0, t, %3; }" : "=d"(s2) : "d"(A), "d"(B), "d"(C));
    O[3 * i] = s0; O[3 * i + 1] = s1; O[3 * i + 2] = s2;
    (void)p;
}
"""


def test_mul_then_add_without_rounding_is_one_fma_as_ptxas_makes_it(rng):
    mod = cukit.compile(CONTRACT, name="contract.cu")
    n = 4096
    x, y, z = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    z = (x * y * np.float32(1 + 2**-20)).astype(np.float32)  # cancellation shows the fma
    X, Y = rng.standard_normal(n), rng.standard_normal(n)
    Z = X * Y * (1 + 2**-40)
    o, O = cukit.to_device(poison(4 * n, np.float32)), cukit.to_device(poison(3 * n, np.float64))
    dev = cukit.to_device
    mod.contract(dev(x), dev(y), dev(z), o, dev(X), dev(Y), dev(Z), O, np.int32(n), grid=16,
                 block=256)
    got, GOT = o.get().reshape(n, 4), O.get().reshape(n, 3)
    x64, y64, z64 = (v.astype(np.float64) for v in (x, y, z))
    exact = x64 * y64  # exact in float64: the fused results round once
    np.testing.assert_array_equal(got[:, 0], (exact + z64).astype(np.float32))
    np.testing.assert_array_equal(got[:, 1], (exact - z64).astype(np.float32))
    np.testing.assert_array_equal(got[:, 2], (z64 - exact).astype(np.float32))
    np.testing.assert_array_equal(got[:, 3], x * y + z)
    assert np.count_nonzero(got[:, 0] != x * y + z) > 100  # the test tells them apart
    from fractions import Fraction

    def fused(a, b, c, sign):
        return float(Fraction(a) * Fraction(b) + sign * Fraction(c))

    for i in range(0, n, 16):
        assert GOT[i, 0] == fused(X[i], Y[i], Z[i], 1)
        assert GOT[i, 1] == fused(X[i], Y[i], Z[i], -1)
    np.testing.assert_array_equal(GOT[:, 2], X * Y + Z)


FUNC_SHARED = r"""
__device__ __noinline__ int swap_in(int v) {
    __shared__ int keep[64];        // one array per block, however often it is called
    int old = keep[threadIdx.x];
    keep[threadIdx.x] = v;
    return old;
}
extern "C" __global__ void twice(const int* x, int* out) {
    int i = blockIdx.x * 64 + threadIdx.x;
    swap_in(x[i]);
    out[i] = swap_in(-1);
}
"""


def test_a_shared_array_of_a_noinline_function_called_twice_is_one_array(rng):
    mod = cukit.compile(FUNC_SHARED, name="func_shared.cu")
    x = rng.integers(-1000, 1000, 4 * 64).astype(np.int32)
    out = cukit.to_device(poison(x.size, np.int32))
    mod.twice(cukit.to_device(x), out, grid=4, block=64)
    np.testing.assert_array_equal(out.get(), x)
