"""The emulator on input that crashed it, answered differently from the GPU, or hung:
each case here failed before its fix (issue 24). Crash-prone cases run in a subprocess
and must end in a clean exception and a normal exit."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import cukit
from conftest import EMULATOR

pytestmark = pytest.mark.skipif(not EMULATOR, reason="runs on cukit's CPU emulator")


def run(code, **env):
    full = dict(os.environ, **{k: v for k, v in env.items() if v is not None})
    for k, v in env.items():
        if v is None:
            full.pop(k, None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=full)


def head(body, params=".param .u64 p0"):
    return (".version 8.0\n.target sm_90\n.address_size 64\n"
            f".visible .entry k({params})\n{{\n{body}\n}}\n")


# ------------------------------------------------------------------ crashes (item 1-4)

def test_printf_star_width_and_precision_as_the_gpu():
    r = run(r"""
        import cukit, numpy as np
        m = cukit.compile(r'''
        extern "C" __global__ void k(int w, int p, double v) {
            printf("[%*s][%.*s][%*d][%-*d][%*.*f][%.*d][%*c]\n", 6, "ab", 2, "abcdef", w, 42,
                   5, 7, 8, p, v, -1, 5, 3, 'z');
        }''')
        m.k(-4, 3, 1.25, grid=1, block=1)
        cukit.synchronize()
    """)
    assert r.returncode == 0, r.stderr
    w, p, v = -4, 3, 1.25
    want = "[%*s][%.*s][%*d][%-*d][%*.*f][%.*d][%*c]" % (6, "ab", 2, "abcdef", w, 42, 5, 7, 8, p,
                                                          v, 0, 5, 3, "z")
    # Python's %.*d with a precision of 0 prints 5 as C's with a negative one does
    assert r.stdout.splitlines() == [want]


def test_printf_with_a_huge_width_and_precision_is_bounded():
    r = run(r"""
        import cukit, time
        m = cukit.compile(r'''extern "C" __global__ void k(double v) {
            printf("%.999999999f|%*d|\n", v, 2000000000, 7); }''')
        t = time.monotonic()
        m.k(1.5, grid=1, block=1)
        cukit.synchronize()
    """)
    assert r.returncode == 0, r.stderr
    # each is cut to 4096 characters; the line keeps its end
    assert r.stdout.startswith("1.5000") and r.stdout.endswith(" 7|\n")
    assert len(r.stdout) <= 2 * 4096 + 8


@pytest.mark.parametrize("offset", ["+100000000", "-8", "+8", "+4"])
def test_ld_param_outside_the_parameters_is_refused_at_load(offset):
    ptx = head(f".reg .b64 %rd<3>;\nld.param.u64 %rd1, [p0{offset}];\nret;")
    r = run(f"""
        import cukit
        try:
            cukit.Module.load({ptx.encode()!r})
        except cukit.CudaError as e:
            print(type(e).__name__, e)
    """)
    assert r.returncode == 0, r.stderr
    assert "ld.param reads 8 bytes at offset" in r.stdout
    assert "outside its 8 bytes of parameters" in r.stdout


@pytest.mark.parametrize("cut", [".version 9.0\n.global .align",
                                 ".version 9.0\n.target sm_90\n.visible .entry k(.param .u64 p0)"
                                 "\n{\n.reg .b64 %rd<3>;\nld.param.u64 %rd1, [p0",
                                 ".version 9.0\n.global .u64 g = generic(",
                                 ".version 9.0\n.global .u32 g[2] = {1, -"])
def test_truncated_ptx_is_refused_without_reading_past_its_end(cut):
    r = run(f"""
        import cukit
        try:
            cukit.Module.load({cut.encode()!r})
        except cukit.CudaError as e:
            print("refused:", e)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("refused:")


def test_b128_initializer_is_read_whole_and_sign_extended():
    ptx = (".version 8.3\n.target sm_90\n.address_size 64\n"
           ".visible .global .align 16 .b128 v[2] = {1, -2};\n"
           ".visible .entry k(.param .u64 p0)\n{\nret;\n}\n")
    mod = cukit.Module.load(ptx.encode())
    got = mod.get_global("v", dtype=np.uint64).get()
    assert got.tolist() == [1, 0, 2**64 - 2, 2**64 - 1]


# What the PTX fuzz target (tests/fuzz, target ptx) found, kept as cases.

def test_fuzz_an_address_near_2_to_the_64_is_a_fault_not_a_crash():
    # [-8 + small] passed "addr + size <= end" of the last allocation hit: the sum wrapped
    ptx = head(".reg .b64 %rd<6>;\n.reg .b32 %r<4>;\nld.param.u64 %rd1, [p0];\n"
               "cvta.to.global.u64 %rd2, %rd1;\nld.global.u32 %r1, [%rd2];\n"
               "mov.u64 %rd3, -8;\nld.global.u64 %rd4, [%rd3];\nld.global.u32 %r2, [%rd3+4];\n"
               "st.global.u64 [%rd2], %rd4;\nret;")
    r = run(f"""
        import cukit, numpy as np
        k = cukit.Module.load({ptx.encode()!r}).get_kernel("k", signature="(long* p)")
        p = cukit.zeros(4, np.int64)
        k(p, grid=1, block=32)
        try:
            cukit.synchronize()
        except cukit.KernelFaultError as e:
            print(e.name, "0xfffffffffffffff8" in str(e))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["CUDA_ERROR_ILLEGAL_ADDRESS", "True"]


@pytest.mark.parametrize("operand", ["{}", "{%r1, %r2, %r1, %r2, %r1}"])
def test_fuzz_a_vector_operand_of_no_items_is_refused(operand):
    ptx = head(f".reg .b32 %r<4>;\n.reg .b64 %rd<3>;\nmov.b64 %rd1, {operand};\nret;")
    r = run(f"""
        import cukit
        try:
            cukit.Module.load({ptx.encode()!r})
        except cukit.CudaError as e:
            print(e.name)
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "CUDA_ERROR_INVALID_PTX"


def test_fuzz_an_array_size_past_2_to_the_64_is_out_of_memory():
    ptx = head("ret;").replace(".visible .entry",
                               ".global .align 16 .b128 v[999999999999999999992] = {1, 2};\n"
                               ".visible .entry")
    with pytest.raises(MemoryError, match="larger than the emulator's memory"):
        cukit.Module.load(ptx.encode())


def test_fuzz_bar_red_without_operands_is_refused():
    with pytest.raises(cukit.NotSupportedError, match="bar.red.popc.u32"):
        cukit.Module.load(head("bar.red.popc.u32;\nret;").encode())


def test_fuzz_local_memory_of_an_odd_size_per_thread(rng):
    # 6 bytes of local memory per thread: the threads' copies were 6 bytes apart, so
    # thread 1's aligned 4-byte access was misaligned on the host (UBSan found it)
    ptx = head(".reg .b32 %r<4>;\n.reg .b64 %rd<5>;\n.local .align 4 .b8 buf[6];\n"
               "mov.u32 %r1, %tid.x;\nld.param.u64 %rd1, [p0];\ncvta.to.global.u64 %rd2, %rd1;\n"
               "mul.wide.u32 %rd3, %r1, 4;\nadd.s64 %rd2, %rd2, %rd3;\nld.global.u32 %r2, [%rd2];\n"
               "st.local.u32 [buf], %r2;\nld.local.u32 %r3, [buf];\nadd.s32 %r3, %r3, 1;\n"
               "st.global.u32 [%rd2], %r3;\nret;")
    k = cukit.Module.load(ptx.encode()).get_kernel("k", signature="(int* p)")
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    p = cukit.to_device(x)
    k(p, grid=1, block=64)
    assert p.get().tolist() == (x + 1).tolist()


# ------------------------------------------------------------------ wrong answers (5, 6)

SHARED32 = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p0)
{
  .reg .b32 %r<5>;
  .reg .b16 %rs<4>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 buf[64];
  mov.u32 %r3, %tid.x;
  add.s32 %r4, %r3, 100;
  cvt.u16.u32 %rs1, %r4;
  mov.u32 %r1, buf;
  add.s32 %r1, %r1, %r3;
  st.shared.u8 [%r1], %rs1;
  bar.sync 0;
  mov.u32 %r1, buf;
  add.s32 %r2, %r1, -16;
  ld.shared.u8 %rs2, [%r2+16];
  ld.param.u64 %rd1, [p0];
  cvta.to.global.u64 %rd2, %rd1;
  cvt.u64.u32 %rd3, %r3;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u8 [%rd2], %rs2;
  ret;
}
"""


def test_a_32_bit_shared_address_plus_offset_wraps_in_32_bits():
    # NVRTC 13.5 emits [%r + 16] with %r = buf - 16, which the GPU wraps to buf[0]
    k = cukit.Module.load(SHARED32.encode()).get_kernel("k", signature="(unsigned char* p)")
    out = cukit.to_device(np.full(8, 7, np.uint8))
    k(out, grid=1, block=8)
    assert out.get().tolist() == [100] * 8


def test_a_negative_shared_offset_says_before_the_start():
    ptx = SHARED32.replace("add.s32 %r2, %r1, -16;\n  ld.shared.u8 %rs2, [%r2+16];",
                           "add.s32 %r2, %r1, -128;\n  cvt.s64.s32 %rd3, %r2;\n"
                           "  ld.shared.u8 %rs2, [%rd3];")
    r = run(f"""
        import cukit, numpy as np
        k = cukit.Module.load({ptx.encode()!r}).get_kernel("k", signature="(unsigned char* p)")
        out = cukit.zeros(8, np.uint8)
        try:
            k(out, grid=1, block=8)
            cukit.synchronize()
        except cukit.KernelFaultError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert "shared offset -128: 128 bytes before the start" in r.stdout


def test_a_grid_of_2_to_the_32_blocks_runs_every_block():
    # (131072, 32768, 1) is a legal grid of 2**32 blocks: counted in 32 bits it ran
    # none and reported success. Its blocks take minutes here: the watchdog stops it,
    # which proves they run.
    r = run("""
        import cukit, numpy as np
        m = cukit.compile('extern "C" __global__ void k(int* p) { if (blockIdx.y == 0) p[0] = 1; }')
        p = cukit.zeros(1, np.int32)
        try:
            m.k(p, grid=(131072, 32768, 1), block=1)
            cukit.synchronize()
            print("ran, p =", p.get()[0])
        except cukit.KernelFaultError as e:
            print(e.name, e)
    """, CUKIT_EMULATOR_TIMEOUT="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("CUDA_ERROR_LAUNCH_TIMEOUT"), r.stdout



# ------------------------------------------------------------------ warp and block collectives (12)

COLLECTIVES = r"""
extern "C" __global__ void k(const int* x, int* out) {
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    int v = x[i];
    __syncwarp();
    if (t % 32 < 16) __syncwarp(0x0000ffffu);
    out[8 * i + 0] = __syncthreads_count(v & 1);
    out[8 * i + 1] = __syncthreads_and(v > -90) + 2 * __syncthreads_and(v > 0);
    out[8 * i + 2] = __syncthreads_or(v > 95) + 2 * __syncthreads_or(v > 1000);
    out[8 * i + 3] = (int)__reduce_add_sync(0xffffffffu, (unsigned)v);
    out[8 * i + 4] = __reduce_min_sync(0xffffffffu, v);
    out[8 * i + 5] = (int)__reduce_max_sync(0xffffffffu, (unsigned)v);
    out[8 * i + 6] = __reduce_max_sync(0xffffffffu, v);
    out[8 * i + 7] = (int)(__reduce_and_sync(0xffffffffu, (unsigned)v) ^
                           __reduce_or_sync(0xffffffffu, (unsigned)v) ^
                           (__reduce_xor_sync(0xffffffffu, (unsigned)v) << 1));
}
"""


def test_syncwarp_reduce_sync_and_syncthreads_count_and_or(rng):
    mod = cukit.compile(COLLECTIVES)
    blocks, threads = 3, 96
    x = rng.integers(-100, 100, blocks * threads).astype(np.int32)
    out = cukit.to_device(np.full(8 * x.size, -12345, np.int32))
    mod.k(cukit.to_device(x), out, grid=blocks, block=threads)
    got = out.get().reshape(-1, 8)
    for i in range(x.size):
        blk = x[i // threads * threads:(i // threads + 1) * threads]
        w = x[i // 32 * 32:(i // 32 + 1) * 32]
        u = w.astype(np.uint32)
        want = [np.count_nonzero(blk & 1), int((blk > -90).all()) + 2 * int((blk > 0).all()),
                int((blk > 95).any()) + 2 * int((blk > 1000).any()),
                int(u.sum(dtype=np.uint32).astype(np.int32)), w.min(), int(u.max().astype(np.int32)),
                w.max(),
                int((np.bitwise_and.reduce(u) ^ np.bitwise_or.reduce(u)
                     ^ (np.bitwise_xor.reduce(u) << np.uint32(1))).astype(np.int32))]
        assert got[i].tolist() == want, i


# ------------------------------------------------------------------ what the emulator cannot run (13)

def test_a_device_side_launch_is_refused_with_the_way_around_it():
    src = r"""
    extern "C" __global__ void child(int* p) { p[threadIdx.x] = 1; }
    extern "C" __global__ void parent(int* p) { child<<<1, 4>>>(p); }
    """
    with pytest.raises(cukit.NotSupportedError,
                       match=r"does not support device-side kernel launches \(dynamic parallelism; "
                             r"launch the child kernels from Python after the parent returns, or "
                             r"run on a GPU\): a kernel launched from a kernel at kernel.cu:3"):
        cukit.compile(src, options=["-rdc=true"])


@pytest.mark.parametrize("body", ["int* q = (int*)malloc(16); q[0] = 3; p[0] = q[0]; free(q);",
                                  "int* q = new int[4]; q[0] = 3; p[0] = q[0]; delete[] q;"])
def test_the_device_heap_is_refused_with_the_way_around_it(body):
    with pytest.raises(cukit.NotSupportedError,
                       match=r"does not support the device heap \(allocate the memory before the "
                             r"launch, with cukit.empty, and pass it to the kernel; or run on a GPU"
                             r"\): malloc inside a kernel"):
        cukit.compile('extern "C" __global__ void k(int* p) { %s }' % body)


def test_managed_variables(rng):
    mod = cukit.compile(r"""
    __managed__ int counter = 5;
    extern "C" __global__ void k(const int* x, int* p) { atomicAdd(&counter, x[threadIdx.x]); }
    """)
    x = rng.integers(-50, 50, 64).astype(np.int32)
    mod.k(cukit.to_device(x), cukit.zeros(1, np.int32), grid=1, block=64)
    assert mod.get_global("counter", dtype=np.int32).get()[0] == 5 + x.sum()


# ------------------------------------------------------------------ PTX a GPU refuses (13)

@pytest.mark.parametrize("change, error", [
    ((".version 8.0", ".version 99.9"), "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
    ((".version 8.0", ".version abc"), "CUDA_ERROR_INVALID_PTX"),
    ((".target sm_90", ".target sm_999"), "CUDA_ERROR_NO_BINARY_FOR_GPU"),
    ((".reg .b64 %rd<3>;", ".reg .b64 %rd<3>;\n.local .align 8 .b8 big[600000];"),
     "CUDA_ERROR_INVALID_PTX"),
    ((".reg .b64 %rd<3>;", ".reg .b64 %rd<3>;\n.shared .align 8 .b8 big[60000];"),
     "CUDA_ERROR_INVALID_PTX"),
    ((".reg .b64 %rd<3>;", ".reg .b64 %rd<3>;\n.shared .align 3 .b8 odd[4];"),
     "CUDA_ERROR_INVALID_PTX"),
    ((".reg .b64 %rd<3>;", ".reg .b64 %rd<100000000>;"), "CUDA_ERROR_NOT_SUPPORTED"),
    ((".version 8.0", ".version 1.0"), "CUDA_ERROR_INVALID_PTX"),
    ((".version 8.0", ".version 7.9"), "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"),
    ((".version 8.0", ".version 7.7"), "CUDA_ERROR_INVALID_PTX"),  # sm_90 needs 7.8
    ((".target sm_90\n", ""), "CUDA_ERROR_INVALID_PTX"),
    ((".address_size 64", ".address_size 32"), "CUDA_ERROR_INVALID_PTX"),
    ((".visible .entry", ".global .u8 g;\n.global .u8 g;\n.visible .entry"),
     "CUDA_ERROR_INVALID_PTX"),
])
def test_ptx_a_gpu_refuses_is_refused(change, error):
    ptx = head(".reg .b64 %rd<3>;\nret;").replace(*change)
    with pytest.raises(cukit.CudaError) as info:
        cukit.Module.load(ptx.encode())
    assert info.value.name == error, str(info.value)


def test_a_huge_global_variable_is_out_of_memory_at_once():
    ptx = head("ret;").replace(".visible .entry", ".global .b8 big[1000000000000];\n.visible .entry")
    with pytest.raises(MemoryError, match="larger than the emulated device's memory"):
        cukit.Module.load(ptx.encode())


def test_an_undefined_branch_label_is_named():
    with pytest.raises(cukit.CudaError, match="the branch target '\\$L_nowhere' is not a label"):
        cukit.Module.load(head("bra $L_nowhere;\nret;").encode())
    for body in ("bra;", "bra 5;", "bra.uni $L1, $L2;"):
        with pytest.raises(cukit.CudaError, match="is not valid PTX: a branch takes one operand, "
                                                  "the label it goes to") as info:
            cukit.Module.load(head(body + "\nret;").encode())
        assert info.value.name == "CUDA_ERROR_INVALID_PTX"


@pytest.mark.parametrize("value, cc", [("sm_80", (8, 0)), ("compute_86", (8, 6)), ("75", (7, 5)),
                                       ("sm_90a", (9, 0))])
def test_architecture_settings_that_are_read(value, cc):
    r = run("""
        import cukit
        print(*cukit.Device(0).compute_capability)
    """, CUKIT_EMULATOR_ARCH=value)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(c) for c in cc]


def test_a_negative_local_offset_says_before_the_start():
    ptx = head(".reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n.local .align 4 .b8 buf[32];\n"
               "mov.u64 %rd1, buf;\nld.local.u32 %r1, [%rd1+-4];\nret;")
    r = run(f"""
        import cukit, numpy as np
        k = cukit.Module.load({ptx.encode()!r}).get_kernel("k", signature="(int* p)")
        try:
            k(cukit.empty(1, np.int32), grid=1, block=1)
            cukit.synchronize()
        except cukit.KernelFaultError as e:
            print(e)
    """)
    assert r.returncode == 0, r.stderr
    assert ("local read at local offset -4: 4 bytes before the start of the thread's 32 bytes "
            "of local memory") in r.stdout


def test_an_elf_file_of_no_machine_is_not_called_a_host_object():
    with pytest.raises(ValueError, match="cannot be loaded: it is an ELF file but") as info:
        cukit.Module.load(b"\x7fELF" + bytes(60))
    assert "host object" not in str(info.value)


@pytest.mark.parametrize("name, value, words", [
    ("CUKIT_EMULATOR_MEMORY", "lots", "is not a size of memory"),
    ("CUKIT_EMULATOR_MEMORY", "16X", "is not a size of memory"),
    ("CUKIT_EMULATOR_MEMORY", "0.5", "is not a size of memory"),
    ("CUKIT_EMULATOR_MEMORY", "99999999T", "is not a size of memory"),   # past 2^64
    ("CUKIT_EMULATOR_MEMORY", "16777216T", "is not a size of memory"),   # 2^64 exactly
    ("CUKIT_EMULATOR_MEMORY", "1e17T", "is not a size of memory"),
    ("CUKIT_EMULATOR_MEMORY", "1", "is not a size of memory"),           # under 1M
    ("CUKIT_EMULATOR_MEMORY", "1000K", "is not a size of memory"),
    ("CUKIT_EMULATOR_ARCH", "sm_abc", "is not an architecture"),
    ("CUKIT_EMULATOR_ARCH", "20", "is not an architecture"),
    ("CUKIT_EMULATOR_ARCH", "sm_90x", "is not an architecture"),
    ("CUKIT_EMULATOR_ARCH", "ninety", "is not an architecture"),
    ("CUKIT_EMULATOR_THREADS", "many", "is not a number of threads"),
    ("CUKIT_EMULATOR_THREADS", "0", "is not a number of threads"),
    ("CUKIT_EMULATOR_THREADS", "-3", "is not a number of threads"),
    ("CUKIT_EMULATOR_THREADS", "2.5", "is not a number of threads"),
    ("CUKIT_EMULATOR_TIMEOUT", "soon", "is not a number of seconds"),
    ("CUKIT_EMULATOR_TIMEOUT", "-1", "is not a number of seconds"),
])
def test_settings_that_are_nonsense_are_refused(name, value, words):
    r = run("""
        import cukit
        try:
            cukit.zeros(3)
        except cukit.InvalidValueError as e:
            print(e)
    """, **{name: value})
    assert r.returncode == 0, r.stderr
    assert f"{name}={value} {words}" in r.stdout


# ------------------------------------------------------------------ resource bombs (14)

def test_a_chain_of_noinline_calls_runs(rng):
    chain = "\n".join(f"__device__ __noinline__ int f{i}(int x) {{ return f{i - 1}(x) * 3 + {i}; }}"
                      for i in range(1, 21))
    mod = cukit.compile("__device__ __noinline__ int f0(int x) { return x + 1; }\n" + chain +
                        '\nextern "C" __global__ void k(int* p) { p[threadIdx.x] = f20(p[threadIdx.x]); }')
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    p = cukit.to_device(x)
    mod.k(p, grid=1, block=32)
    want = x.astype(np.int64) + 1
    for i in range(1, 21):
        want = (want * 3 + i) % 2**32
    assert p.get().tolist() == want.astype(np.uint32).astype(np.int32).tolist()


def test_a_fan_out_of_noinline_calls_is_refused_early():
    fan = "\n".join(f"__device__ __noinline__ int g{i}(int x) {{ return g{i - 1}(x) + g{i - 1}(x + 1) "
                    f"+ {i}; }}" for i in range(1, 25))
    with pytest.raises(cukit.NotSupportedError, match="does not support kernels this large: k"):
        cukit.compile("__device__ __noinline__ int g0(int x) { return x * 7 + 1; }\n" + fan +
                      '\nextern "C" __global__ void k(int* p) { p[0] = g24(p[0]); }')


def test_a_huge_register_declaration_is_refused_early():
    with pytest.raises(cukit.NotSupportedError, match="declares more than 262144 registers"):
        cukit.Module.load(head(".reg .b32 %r<100000000>;\nret;").encode())


def test_a_script_in_a_folder_named_cukit_is_named_as_the_allocation_place(tmp_path):
    folder = tmp_path / "cukit"
    folder.mkdir()
    script = folder / "user_script.py"
    script.write_text(textwrap.dedent("""
        import cukit, numpy as np
        mod = cukit.compile('extern "C" __global__ void k(float* x) { x[threadIdx.x + 4] = 1; }')
        x = cukit.zeros(4, np.float32)
        mod.k(x, grid=1, block=1)
        try:
            cukit.synchronize()
        except cukit.KernelFaultError as e:
            print(e)
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stderr
    assert "made at user_script.py:4" in r.stdout, r.stdout


def test_the_emulator_benchmark_explains_itself():
    import pathlib
    bench = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "bench_emulator.py"
    r = subprocess.run([sys.executable, str(bench), "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "thread-instructions per second per core" in r.stdout and "--json PATH" in r.stdout
    assert "--clock {wall,cpu}" in r.stdout and "CPU time" in r.stdout
    assert "--child" not in r.stdout


# ------------------------------------------------------------------ the lost context (9), its thread (7)

AFTER_A_FAULT = r"""
import cukit, numpy as np
mod = cukit.compile('extern "C" __global__ void bad(float* p) { p[threadIdx.x + 64] = 1; }'
                    '\nextern "C" __global__ void good(float* p) { p[threadIdx.x] = 2; }')
x = cukit.zeros(4, np.float32)
mod.bad(x, grid=1, block=1)
try:
    cukit.synchronize()
except cukit.KernelFaultError as e:
    print("fault", e.name)
for what, call in [("alloc", lambda: cukit.zeros(4)), ("copy in", lambda: cukit.to_device(np.ones(3))),
                   ("launch", lambda: (mod.good(x, grid=1, block=4), cukit.synchronize())),
                   ("copy out", lambda: x.get()), ("sync", cukit.synchronize),
                   ("load", lambda: cukit.compile('extern "C" __global__ void k(int* p) { *p = 1; }'))]:
    try:
        call()
        print(what, "works")
    except cukit.CudaError as e:
        print(what, "fails", e.name)
"""


def test_after_a_fault_the_context_is_lost_as_on_a_gpu():
    r = run(AFTER_A_FAULT, CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT=None)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "fault CUDA_ERROR_ILLEGAL_ADDRESS"
    assert lines[1:] == [f"{w} fails CUDA_ERROR_ILLEGAL_ADDRESS"
                         for w in ["alloc", "copy in", "launch", "copy out", "sync", "load"]]


def test_the_debugging_switch_keeps_the_context():
    r = run(AFTER_A_FAULT, CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT="1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "fault CUDA_ERROR_ILLEGAL_ADDRESS"
    assert lines[1:] == [f"{w} works" for w in ["alloc", "copy in", "launch", "copy out", "sync",
                                                "load"]]


THREADS = r"""
import threading, cukit, numpy as np
mod = cukit.compile('extern "C" __global__ void bad(float* p) { p[threadIdx.x + 64] = 1; }'
                    '\nextern "C" __global__ void good(float* p) { p[threadIdx.x] += 1; }')
seen = {"A": 0, "B": 0}
def a():
    x = cukit.zeros(4, np.float32)
    s = cukit.Stream()
    mod.bad(x, grid=1, block=1, stream=s)
    try:
        s.synchronize()
    except cukit.KernelFaultError as e:
        seen["A"] += "kernel bad" in str(e)
def b():
    y = cukit.zeros(32, np.float32)
    s = cukit.Stream()
    for _ in range(200):
        try:
            mod.good(y, grid=1, block=32, stream=s)
            s.synchronize()
        except cukit.KernelFaultError:
            seen["B"] += 1
            return
tb = threading.Thread(target=b); ta = threading.Thread(target=a)
tb.start(); ta.start(); ta.join(); tb.join()
print(seen["A"], seen["B"])
"""


@pytest.mark.parametrize("keep", [None, "1"])
def test_a_fault_is_reported_to_the_thread_that_launched_it(keep):
    for _ in range(5):
        r = run(THREADS, CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT=keep)
        assert r.returncode == 0, r.stderr
        a, b = map(int, r.stdout.split())
        assert a == 1, r.stdout  # the launching thread always hears of its fault
        if keep:
            assert b == 0, r.stdout  # with the context kept, nobody else does


QUIET_THREAD = r"""
import threading, time, cukit, numpy as np
mod = cukit.compile('extern "C" __global__ void bad(unsigned long long a) { *(float*)a = 1; }')
mod.bad(32, grid=1, block=1)  # this thread's bad kernel, held for this thread
def quiet():  # another bad kernel, and its thread ends without waiting for it
    mod.bad(16, grid=1, block=1, stream=cukit.Stream())
t = threading.Thread(target=quiet); t.start(); t.join()
seen, tries = "", 0
# this thread's fault, and the other's once its thread has ended (an instant after join)
while not ("0x10" in seen and "0x20" in seen) and tries < 500:
    try:
        cukit.synchronize()
        time.sleep(0.01)
    except cukit.KernelFaultError as e:
        seen += str(e)
    tries += 1
try:
    cukit.synchronize()
    seen += " then none"
except cukit.KernelFaultError:
    seen += " then again"
print("0x20" in seen, "0x10" in seen, seen.endswith(" then none"))
"""


def test_with_the_context_kept_no_fault_is_lost():
    """A thread that ends without waiting hands its fault to the next wait, and one
    thread's held fault does not hide another's: both are reported, each once."""
    r = run(QUIET_THREAD, CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True", "True"], r.stdout


# ------------------------------------------------------------------ Ctrl-C and the watchdog (11)

SPIN = r"""
import cukit, numpy as np
m = cukit.compile(r'''extern "C" __global__ void spin(volatile int* p) {
    while (p[0] == 0) {
        p[1] += 1;
    }
}''', name="spin.cu")
x = cukit.zeros(2, np.int32)
print("launching", flush=True)
try:
    m.spin(x, grid=2, block=64)
    cukit.synchronize()
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
except cukit.CudaError as e:
    print(e.name, e)
try:
    x.get()
except cukit.CudaError as e:
    print("after", e.name)
"""


def test_ctrl_c_stops_a_kernel_that_never_ends_with_keyboard_interrupt():
    p = subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ))
    try:
        assert p.stdout.readline().strip() == "launching"
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert out.splitlines() == ["KeyboardInterrupt", "after CUDA_ERROR_LAUNCH_TIMEOUT"], out + err


def test_the_watchdog_names_the_kernel_and_the_line_of_each_warp():
    r = run(SPIN, CUKIT_EMULATOR_TIMEOUT="0.5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].startswith("CUDA_ERROR_LAUNCH_TIMEOUT cuCtxSynchronize failed: "
                               "CUDA_ERROR_LAUNCH_TIMEOUT (702): the kernel spin ran past "
                               "CUKIT_EMULATOR_TIMEOUT (0.5 s)"), lines
    assert "warp 0 at spin.cu:" in lines[1] and "warp 1 at spin.cu:" in lines[1]
    assert lines[2] == "after CUDA_ERROR_LAUNCH_TIMEOUT"


# ------------------------------------------------------------------ independent thread scheduling (10)

SPINS = r"""
extern "C" __global__ void warps(volatile int* flag, int* out) {
    // warp 0 waits for a flag that warp 1 sets
    if (threadIdx.x / 32 == 0) {
        while (flag[0] == 0) { }
        out[threadIdx.x] = flag[0];
    } else {
        flag[0] = 7 + (threadIdx.x == 32);
        out[threadIdx.x] = -1;
    }
}
extern "C" __global__ void lanes(volatile int* flag, int* out) {
    // lane 0 waits for a flag that lane 5 of its own warp sets
    if (threadIdx.x == 0) {
        while (flag[0] == 0) { }
        out[0] = flag[0];
    } else if (threadIdx.x == 5) {
        flag[0] = 11;
    }
}
extern "C" __global__ void locked(int* lock, int* counter, const int* x, int n) {
    // a per-thread spin lock around a non-atomic update
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    bool done = false;
    while (!done) {
        if (atomicCAS(lock, 0, 1) == 0) {
            counter[0] = counter[0] + x[i];
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        }
    }
}
"""


def test_spin_waits_between_warps_and_lanes_and_a_spin_lock_make_progress(rng):
    mod = cukit.compile(SPINS)
    flag, out = cukit.zeros(1, np.int32), cukit.to_device(np.full(64, -5, np.int32))
    mod.warps(flag, out, grid=1, block=64)
    got = out.get()
    assert (got[32:] == -1).all() and set(got[:32].tolist()) <= {7, 8}
    flag, out = cukit.zeros(1, np.int32), cukit.to_device(np.full(1, -5, np.int32))
    mod.lanes(flag, out, grid=1, block=32)
    assert out.get()[0] == 11
    n = 300
    x = rng.integers(-100, 100, n).astype(np.int32)
    counter = cukit.zeros(1, np.int32)
    mod.locked(cukit.zeros(1, np.int32), counter, cukit.to_device(x), n, grid=3, block=128)
    assert counter.get()[0] == x.sum()
