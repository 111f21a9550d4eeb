"""The CPU emulator: checked memory with faults that name the source line, unsupported
instructions refused at load, printf, warp-level operations, and the backend switch."""
import gc
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
from conftest import EMULATOR, poison

emulator = pytest.mark.skipif(not EMULATOR, reason="runs on cukit's CPU emulator")


@pytest.fixture(autouse=True)
def keep_the_context(monkeypatch):
    """The faults here are raised in this process, to read their messages: the debugging
    switch keeps the context usable after each (test_emulator_hardening.py checks that
    without it the context is lost, as on a GPU)."""
    monkeypatch.setenv("CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT", "1")


def run(code, **env):
    full = dict(os.environ, **env)
    for k, v in env.items():
        if v is None:
            del full[k]
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=full)


# ------------------------------------------------------------------ faults

OOB = r"""
extern "C" __global__ void shift(const float* x, float* y, int n, int by) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = x[i + by];
    }
}
"""


@emulator
def test_a_wild_address_is_not_called_an_overrun(rng):
    """Far from every allocation (a garbage pointer), the message says no allocation is
    near, not 'a billion bytes past the end of' the nearest one."""
    mod = cukit.compile(OOB, name="shift.cu")
    n = 1024
    x = cukit.to_device(rng.standard_normal(n).astype(np.float32))
    y = cukit.to_device(poison(n, np.float32))
    mod.shift(x, y, n, 1 << 28, grid=4, block=256)  # 1 GiB past x
    with pytest.raises(cukit.KernelFaultError) as info:
        cukit.synchronize()
    msg = str(info.value)
    assert "no allocation is near it (the nearest" in msg and "past the end" not in msg


@emulator
def test_out_of_bounds_read_names_kernel_thread_allocation_and_line(rng):
    mod = cukit.compile(OOB, name="shift.cu")
    n = 1024
    x = cukit.to_device(rng.standard_normal(n).astype(np.float32))  # the allocation named below
    line = sys._getframe().f_lineno - 1
    y = cukit.to_device(poison(n, np.float32))
    mod.shift(x, y, n, 3, grid=4, block=256)
    with pytest.raises(cukit.KernelFaultError) as info:
        cukit.synchronize()
    msg = str(info.value)
    assert info.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert "out-of-bounds 4-byte global read" in msg
    assert "kernel shift, block (3, 0, 0), thread (253, 0, 0)" in msg
    assert "4 bytes past the end of a 4096-byte allocation" in msg, msg
    assert f"made at test_emulator.py:{line}" in msg
    assert "at shift.cu:5" in msg
    assert "The context stays usable: CUKIT_EMULATOR_DEBUG_KEEP_CONTEXT is set" in msg
    assert "restart the process" not in msg
    # the process keeps working
    host = rng.standard_normal(n).astype(np.float32)
    x.set(host)
    mod.shift(x, y, n - 3, 3, grid=4, block=256)
    np.testing.assert_array_equal(y.get()[: n - 3], host[3:])


@emulator
def test_fault_before_an_allocation_and_in_freed_memory(rng):
    mod = cukit.compile(OOB, name="shift.cu")
    x = cukit.to_device(rng.standard_normal(256).astype(np.float32))
    y = cukit.empty(256, np.float32)
    mod.shift(x, y, 256, -8, grid=1, block=256)
    with pytest.raises(cukit.KernelFaultError, match="32 bytes before the start of a 1024-byte"):
        cukit.synchronize()
    k = cukit.compile(r'extern "C" __global__ void poke(float* p) { p[threadIdx.x] = 1; }').poke
    # Where the cache of freed blocks is on (off by default here), a block freed while
    # only the legacy stream is busy stays allocated (docs/guide/memory.md): not freed yet.
    was = cukit._keep_freed(False)
    try:
        dead = cukit.to_device(rng.standard_normal(256).astype(np.float32))
        ptr = dead.ptr
        dead.free()
        k(ptr, grid=1, block=32)
        with pytest.raises(cukit.KernelFaultError, match="already freed"):
            cukit.synchronize()
    finally:
        cukit._keep_freed(was)
    # Memory the stream-ordered pool holds for reuse is freed memory too.
    big = cukit.to_device(rng.standard_normal(3 << 20).astype(np.float32))  # past the kept size
    ptr = big.ptr
    del big
    k(ptr, grid=1, block=32)
    with pytest.raises(cukit.KernelFaultError, match="already freed"):
        cukit.synchronize()


@emulator
def test_shared_memory_overrun_and_misaligned_access():
    mod = cukit.compile(r"""
    extern "C" __global__ void over(int* out, int k) {
        __shared__ int tile[64];
        tile[threadIdx.x + k] = threadIdx.x;
        __syncthreads();
        out[threadIdx.x] = tile[threadIdx.x];
    }
    extern "C" __global__ void skew(char* p) { *(int*)(p + 1) = 7; }
    """, name="tiles.cu")
    out = cukit.empty(64, np.int32)
    mod.over(out, 1, grid=1, block=64)
    with pytest.raises(cukit.KernelFaultError,
                       match=r"shared write.*4 bytes past the end of the block's 256 bytes of "
                             r"shared memory in kernel over, block \(0, 0, 0\), thread \(63, 0, 0\), "
                             r"at tiles.cu:4"):
        cukit.synchronize()
    mod.over(out, 0, grid=1, block=64)
    np.testing.assert_array_equal(out.get(), np.arange(64))
    mod.skew(cukit.zeros(16, np.uint8), grid=1, block=1)
    with pytest.raises(cukit.KernelFaultError, match="misaligned") as info:
        cukit.synchronize()
    assert info.value.name == "CUDA_ERROR_MISALIGNED_ADDRESS"


@emulator
def test_a_fault_is_held_through_the_queries_cukit_makes():
    """An array that goes while a cukit.Stream lives makes cukit query the streams (may
    the block be kept?) and ignore the answer: the fault stays held for the next call
    that waits (a query does not wait, and leaves it held)."""
    skew = cukit.compile(r'extern "C" __global__ void skew(char* p) { *(int*)(p + 1) = 7; }').skew
    s = cukit.Stream()
    for _ in range(2):
        skew(cukit.zeros(16, np.uint8), grid=1, block=1)   # the temporary goes at once
        assert s.query() is True                            # nothing queued on s
        done = cukit.Event().record()
        while not done.query():                             # the kernel may still be queued
            pass
        with pytest.raises(cukit.KernelFaultError, match="misaligned") as info:
            cukit.synchronize()
        assert "restart the process" not in str(info.value)
    cukit.synchronize()                                       # reported once: nothing held


@emulator
def test_texture_and_surface_faults_name_the_object_and_the_line():
    mod = cukit.compile(r"""
    extern "C" __global__ void read(cudaTextureObject_t t, float* out) {
        out[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);
    }
    extern "C" __global__ void poke(cudaSurfaceObject_t s, int x) {
        surf2Dwrite(1.0f, s, x * 4, 0);
    }
    """, name="tex.cu")
    src = cukit.to_device(np.arange(32, dtype=np.float32))
    tex = cukit.Texture(src)
    handle = tex.handle
    out = cukit.to_device(poison(32, np.float32))
    mod.read(handle, out, grid=1, block=32)
    np.testing.assert_array_equal(out.get(), np.arange(32, dtype=np.float32))
    del tex
    mod.read(handle, out, grid=1, block=32)             # the texture was destroyed
    with pytest.raises(cukit.KernelFaultError, match=rf"0x{handle:x} is not a live texture "
                                                     r"object .*kernel read.*tex.cu:3"):
        cukit.synchronize()
    ca = cukit.CudaArray((2, 8), np.float32, surface=True)
    surf = cukit.Surface(ca)
    mod.poke(surf, 7, grid=1, block=1)
    mod.poke(surf, 8, grid=1, block=1)                  # one element past the row
    with pytest.raises(cukit.KernelFaultError, match=r"a surface access outside its CUDA array "
                                                     r"\(.trap\).*tex.cu:6"):
        cukit.synchronize()
    want = np.zeros((2, 8), np.float32)
    want[0, 7] = 1
    np.testing.assert_array_equal(ca.get(), want)


@emulator
def test_debug_mode_names_the_launch_and_its_arguments(rng):
    mod = cukit.compile(OOB, name="shift.cu")
    x, y = cukit.zeros(64, np.float32), cukit.zeros(64, np.float32)
    cukit.set_debug(True)
    try:
        with pytest.raises(cukit.KernelFaultError, match=r"(?s)shift.cu:5.*\(debug mode\) the "
                                                         r"launch that failed: shift"):
            mod.shift(x, y, 64, 1, grid=1, block=64)
    finally:
        cukit.set_debug(False)


# ------------------------------------------------------------------ what the emulator refuses

@emulator
def test_unsupported_instruction_is_refused_at_load_with_its_line():
    src = ('extern "C" __global__ void k(int* p) {\n'
           '    p[threadIdx.x] = 1;\n'
           '    asm volatile("cp.async.bulk.commit_group;");\n'
           '}\n')
    with pytest.raises(cukit.NotSupportedError,
                       match=r"does not support the PTX instruction 'cp.async.bulk.commit_group' at "
                             r"async.cu:3 \(PTX line \d+\)"):
        cukit.compile(src, name="async.cu")


# ------------------------------------------------------------------ prefetch

PREFETCH = r"""
// every form of prefetch a kernel may write (hints: the result is the copy's), also of
// lines past the array's end, which the GPU drops
extern "C" __global__ void pf(const float *in, float *out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    asm volatile("prefetch.global.L2 [%0];" :: "l"(in + i + 4096));
    asm volatile("prefetch.global.L1 [%0];" :: "l"(in + i));
    asm volatile("prefetch.L2 [%0];" :: "l"(in + i + 32));
    asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(in + i + 64));
    asm volatile("prefetch.global.L2::evict_normal [%0+128];" :: "l"(in + i));
    asm volatile("prefetchu.L1 [%0];" :: "l"(in + i));
    if (i < n) out[i] = in[i];
}
"""


@pytest.mark.gpu
def test_prefetch_of_every_form_is_a_hint(rng):
    mod = cukit.compile(PREFETCH, name="prefetch.cu")
    h = rng.standard_normal(1000).astype(np.float32)
    y = cukit.empty(1000, np.float32)
    mod.pf(cukit.to_device(h), y, np.int32(1000), grid=4, block=256)
    np.testing.assert_array_equal(y.get(), h)


@emulator
@pytest.mark.parametrize("inst", ["prefetch.global.L3 [%0];", "prefetch.shared.L1 [%0];",
                                  "prefetchu.L2 [%0];", "prefetch.local.L2::evict_last [%0];",
                                  "prefetch.global [%0];", "prefetch.L2.global [%0];"])
def test_prefetch_forms_the_gpu_lacks_are_refused(inst):
    src = ('extern "C" __global__ void k(const float *p) {\n'
           f'    asm volatile("{inst}" :: "l"(p));\n'
           '}\n')
    op = inst.split(" ")[0]
    with pytest.raises(cukit.NotSupportedError,
                       match=re.escape(f"does not support the PTX instruction '{op}'")):
        cukit.compile(src, name="pf.cu")


# ------------------------------------------------------------------ cp.async

CP_ASYNC = r"""
#include <cuda_pipeline.h>
// Each block stages 256-float tiles through two shared buffers (cp.async of 16, 8 and 4
// bytes, the next tile's copies in flight while this one is read), then writes each tile
// reversed and doubled. zfill: the last `cut` floats of each 16-byte group read as zero.
extern "C" __global__ void stage(const float *in, float *out, int ntiles, int step, int cut) {
    __shared__ __align__(16) float buf[2][256];
    const int t = threadIdx.x;
    const long long b0 = (long long)blockIdx.x * ntiles * 256;
    auto copy = [&](int k) {
        const float *src = in + b0 + (long long)k * 256;
        float *dst = buf[k & 1];
        for (int i = t * step; i < 256; i += 64 * step) {
            if (step == 4)
                __pipeline_memcpy_async(dst + i, src + i, 16, 4 * cut);
            else if (step == 2)
                __pipeline_memcpy_async(dst + i, src + i, 8);
            else
                __pipeline_memcpy_async(dst + i, src + i, 4);
        }
        __pipeline_commit();
    };
    copy(0);
    for (int k = 0; k < ntiles; k++) {
        if (k + 1 < ntiles) { copy(k + 1); __pipeline_wait_prior(1); }
        else __pipeline_wait_prior(0);
        __syncthreads();
        for (int i = t; i < 256; i += 64)
            out[b0 + (long long)k * 256 + i] = 2.0f * buf[k & 1][255 - i];
        __syncthreads();
    }
}
// cp.async's other operands by hand: ignore-src (a predicate: read nothing, write zeros)
// and a cache policy (an L2 hint, nothing to the result)
extern "C" __global__ void pick(const int *in, int *out, const int *keep) {
    __shared__ __align__(16) int sh[64];
    const int t = threadIdx.x;
    unsigned d = (unsigned)__cvta_generic_to_shared(&sh[t]);
    asm volatile("{\n .reg .pred p;\n setp.eq.s32 p, %2, 0;\n"
                 " cp.async.ca.shared.global [%0], [%1], 4, p;\n}\n"
                 :: "r"(d), "l"(in + t), "r"(keep[t]) : "memory");
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    __syncthreads();
    out[t] = sh[63 - t];
    __syncthreads();
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;"
                 :: "r"((unsigned)__cvta_generic_to_shared(&sh[(t & 15) * 4])), "l"(in + (t & 15) * 4),
                 "l"(pol) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    out[64 + t] = sh[t];
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("step,cut", [(4, 0), (4, 1), (4, 3), (2, 0), (1, 0)])
def test_cp_async_stages_tiles_and_zero_fills(rng, step, cut):
    """sm_80's asynchronous copies (cuda_pipeline.h): 16-, 8- and 4-byte copies, two tiles
    in flight (wait_group 1), the zero fill of a short source."""
    mod = cukit.compile(CP_ASYNC, name="cp_async.cu")
    blocks, ntiles = 3, 5
    h = rng.standard_normal(blocks * ntiles * 256).astype(np.float32)
    x, y = cukit.to_device(h), cukit.empty(h.size, np.float32)
    mod.stage(x, y, np.int32(ntiles), np.int32(step), np.int32(cut), grid=blocks, block=64)
    want = h.reshape(-1, 4).copy()
    if cut:
        want[:, 4 - cut:] = 0
    want = 2 * want.reshape(-1, 256)[:, ::-1].reshape(-1)
    np.testing.assert_array_equal(y.get(), want)


@pytest.mark.gpu
def test_cp_async_ignore_src_and_cache_policy(rng):
    mod = cukit.compile(CP_ASYNC, name="cp_async.cu")
    h = rng.integers(-1000, 1000, 64).astype(np.int32)
    keep = rng.integers(0, 2, 64).astype(np.int32)
    out = cukit.empty(128, np.int32)
    mod.pick(cukit.to_device(h), out, cukit.to_device(keep), grid=1, block=64)
    got = out.get()
    np.testing.assert_array_equal(got[:64], np.where(keep == 1, h, 0)[::-1])
    np.testing.assert_array_equal(got[64:], h)


FORMS = r"""
__device__ __align__(16) int table[32] = {TABLE};
// the operand forms one at a time, from thread 0: a register source size, an offset on a
// 32-bit shared address, a symbol source with an offset and a cache policy, ignore-src,
// a guard; .L2::128B and wait_group's count
extern "C" __global__ void forms(int *out, const int *in, int srcsize, int flag) {
    __shared__ __align__(16) int sh[32];
    for (int i = threadIdx.x; i < 32; i += blockDim.x) sh[i] = -1;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned base = (unsigned)__cvta_generic_to_shared(sh);
        unsigned long long pol;
        asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
        asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 16, %2;"
                     :: "r"(base), "l"(in), "r"(srcsize) : "memory");
        asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0+16], [table+16], 16, %1;"
                     :: "r"(base), "l"(pol) : "memory");
        asm volatile("{\n .reg .pred p;\n setp.ne.s32 p, %2, 0;\n"
                     " cp.async.ca.shared.global [%0+32], [%1+32], 4, p;\n}"
                     :: "r"(base), "l"(in), "r"(flag) : "memory");
        asm volatile("{\n .reg .pred q;\n setp.ne.s32 q, %2, 0;\n"
                     " @q cp.async.ca.shared.global [%0+48], [%1+48], 8;\n}"
                     :: "r"(base), "l"(in), "r"(flag) : "memory");
        asm volatile("cp.async.commit_group;\n cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();
    for (int i = threadIdx.x; i < 32; i += blockDim.x) out[i] = sh[i];
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("srcsize,flag", [(16, 0), (6, 1), (0, 1)])
def test_cp_async_operand_forms(rng, srcsize, flag):
    table = rng.integers(-1000, 1000, 32).astype(np.int32)
    mod = cukit.compile(FORMS.replace("TABLE", ", ".join(map(str, table))), name="forms.cu")
    h = rng.integers(-2**31, 2**31 - 1, 32).astype(np.int32)
    out = cukit.empty(32, np.int32)
    mod.forms(out, cukit.to_device(h), np.int32(srcsize), np.int32(flag), grid=1, block=32)
    want = np.full(32, -1, np.int32)
    head = h[:4].view(np.uint8).copy()
    head[srcsize:] = 0
    want[:4] = head.view(np.int32)
    want[4:8] = table[4:8]
    want[8] = 0 if flag else h[8]
    if flag:
        want[12:14] = h[12:14]
    np.testing.assert_array_equal(out.get(), want)


@emulator
def test_cp_async_faults_like_a_load():
    """A misaligned source, a source outside any allocation and a destination past the
    block's shared memory are faults that name the kernel and the line."""
    mod = cukit.compile(r"""
    #include <cuda_pipeline.h>
    extern "C" __global__ void k(const char *in, int skew, int past, int *out) {
        __shared__ __align__(16) int sh[16];
        __pipeline_memcpy_async((char *)sh + 16 * past, in + skew, 16);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        out[0] = sh[0];
    }
    """, name="cpa.cu")
    x, out = cukit.zeros(64, np.uint8), cukit.empty(1, np.int32)
    mod.k(x, 4, 0, out, grid=1, block=1)
    with pytest.raises(cukit.KernelFaultError, match="misaligned") as info:
        cukit.synchronize()
    assert info.value.name == "CUDA_ERROR_MISALIGNED_ADDRESS"
    mod.k(x, 64, 0, out, grid=1, block=1)
    with pytest.raises(cukit.KernelFaultError, match=r"(?s)global read.*in kernel k.*cpa.cu:5"):
        cukit.synchronize()
    mod.k(x, 0, 4, out, grid=1, block=1)
    with pytest.raises(cukit.KernelFaultError, match=r"shared write.*past the end of the block's 64 "
                                                     r"bytes of shared memory in kernel k"):
        cukit.synchronize()
    mod.k(x, 16, 0, out, grid=1, block=1)
    assert out.get()[0] == 0


@emulator
def test_machine_code_is_refused_with_the_fix():
    cubin = cukit.Program('extern "C" __global__ void k() {}').cubin(arch="sm_90")
    with pytest.raises(cukit.NotSupportedError, match="runs PTX, not machine code: this image is "
                                                      "a cubin"):
        cukit.Module.load(cubin)
    ptx = cukit.Program('extern "C" __global__ void k(int* p) { *p = 5; }').ptx(arch="compute_90")
    k = cukit.Module.load(ptx).get_kernel("k", signature="(int* p)")
    out = cukit.zeros(1, np.int32)
    k(out, grid=1, block=1)
    assert out.get()[0] == 5


# ------------------------------------------------------------------ named barriers

NAMED = r"""
// A producer warp hands 64-element tiles to two consumer warps through shared memory:
// barrier 1 says a tile is full (the producer arrives, the consumers wait), barrier 2
// that it is empty again (the other way round). Then the consumers alone (barrier 3, 64
// threads, the number and count in registers) swap their last values.
extern "C" __global__ void relay(const float* x, float* y, float* z, int rounds) {
    __shared__ float buf[64], part[64];
    const int w = threadIdx.x >> 5, t = threadIdx.x;
    const float* xb = x + (size_t)blockIdx.x * rounds * 64;
    float* yb = y + (size_t)blockIdx.x * rounds * 64;
    if (w == 2) {
        const int l = t - 64;
        for (int r = 0; r < rounds; r++) {
            if (r > 0) asm volatile("bar.sync 2, 96;" ::: "memory");
            buf[l] = xb[r * 64 + l];
            buf[l + 32] = xb[r * 64 + l + 32];
            asm volatile("bar.arrive 1, 96;" ::: "memory");
        }
        return;
    }
    float v = 0.0f;
    for (int r = 0; r < rounds; r++) {
        asm volatile("bar.sync 1, 96;" ::: "memory");
        v = buf[t];
        yb[r * 64 + t] = 2.0f * v + (float)r;
        if (r + 1 < rounds) asm volatile("bar.arrive 2, 96;" ::: "memory");
    }
    part[t] = v;
    asm volatile("bar.sync %0, %1;" :: "r"(3), "r"(64) : "memory");
    z[blockIdx.x * 64 + t] = part[63 - t];
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("rounds", [1, 2, 7])
def test_named_barriers_hand_tiles_from_a_producer_warp(rng, rounds):
    """bar.sync and bar.arrive with a barrier number and a thread count (warp
    specialization): each consumer sees each tile the producer wrote, and a barrier of two
    of the block's three warps holds after the third has exited."""
    mod = cukit.compile(NAMED, name="named.cu")
    blocks = 5
    h = rng.standard_normal(blocks * rounds * 64).astype(np.float32)
    x = cukit.to_device(h)
    y, z = cukit.empty(h.size, np.float32), cukit.empty(blocks * 64, np.float32)
    mod.relay(x, y, z, np.int32(rounds), grid=blocks, block=96)
    tiles = h.reshape(blocks, rounds, 64)
    np.testing.assert_array_equal(y.get().reshape(blocks, rounds, 64),
                                  2 * tiles + np.arange(rounds, dtype=np.float32)[None, :, None])
    np.testing.assert_array_equal(z.get().reshape(blocks, 64), tiles[:, -1, ::-1])


DIVERGED = r"""
// Before each barrier the lanes of a warp go apart: a loop of a different length for
// each lane (the emulator lets the lanes at a higher pc run after a while, so some reach
// the barrier first), lanes that return early, and __syncthreads between named
// barriers (a warp's arrival releases warps that ran before it in the block's pass).
extern "C" __global__ void diverged(const int* n, int* out, int* log) {
    __shared__ int sh[128];
    const int t = threadIdx.x, w = t >> 5;
    unsigned s = 0;
    for (int i = 0; i < n[0] * (t & 31); i++) s += i ^ t;
    sh[t] = (int)s;
    asm volatile("bar.sync 1, 128;" ::: "memory");
    out[t] = sh[127 - t];
    __syncthreads();
    if (w == 3) {
        sh[t] = t;
        asm volatile("bar.arrive 2, 128;" ::: "memory");
        return;
    }
    if (t >= 80) return;  // warp 2 keeps lanes 64-79, and waits for them
    asm volatile("bar.sync 2, 128;" ::: "memory");
    log[t] = sh[96 + (t & 31)];
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 3000])
def test_named_barriers_after_diverged_lanes(n):
    """A warp arrives at a named barrier when all its threads that have not exited reach
    it, however the emulator ran them apart before; early returns leave the rest of the
    warp to arrive for it."""
    mod = cukit.compile(DIVERGED, name="diverged.cu")
    out, log = cukit.zeros(128, np.int32), cukit.zeros(128, np.int32)
    mod.diverged(cukit.to_device(np.array([n], np.int32)), out, log, grid=1, block=128)
    t = np.arange(128)
    sums = np.array([(np.arange(n * (k & 31), dtype=np.int64) ^ k).sum() & 0xFFFFFFFF for k in t],
                    np.uint32).view(np.int32)
    np.testing.assert_array_equal(out.get(), sums[::-1])
    want = np.zeros(128, np.int32)
    want[:80] = 96 + (t[:80] & 31)
    np.testing.assert_array_equal(log.get(), want)


def barrier_fault(body, threads, name, match):
    """Runs k(int* out) { body; out[threadIdx.x] = 1; } on one block of `threads` and
    expects a fault matching `match` (body starts on the kernel's line 3)."""
    mod = cukit.compile(r"""
    extern "C" __global__ void k(int* out) {
        BODY
        out[threadIdx.x] = 1;
    }
    """.replace("BODY", body), name=name)
    out = cukit.zeros(threads, np.int32)
    mod.k(out, grid=1, block=threads)
    with pytest.raises(cukit.KernelFaultError, match=match):
        cukit.synchronize()


@emulator
def test_a_named_barrier_with_two_counts_is_a_fault():
    """Warps that wait at one barrier with different thread counts: a fault naming both."""
    barrier_fault('if (threadIdx.x < 32) asm volatile("bar.sync 1, 64;");\n'
                  '        else asm volatile("bar.sync 1, 96;");', 96, "two.cu",
                  r"bar.sync 1, 96: the barrier is waited on with another thread count \(64\) now")


@emulator
def test_a_named_barrier_nobody_completes_is_a_fault():
    """On a GPU a block whose warps wait at a barrier that never fills hangs; the emulator
    stops it with a fault that names the barrier and the count."""
    barrier_fault('if (threadIdx.x >= 32) return;\n        asm volatile("bar.sync 1, 64;");', 64,
                  "stuck.cu", r"named barrier 1 waits for 64 threads and 32 have arrived.*stuck\.cu:4")


@emulator
@pytest.mark.parametrize("ident,count,why", [
    ("16", "64", "a block has barriers 0 to 15"),
    ("1", "48", "a multiple of 32"),
    ("1", "128", "a multiple of 32, from 32 up to the block's threads"),
    ("threadIdx.x & 1", "64", "name different barriers or thread counts.*they must agree"),
    ("1", "(threadIdx.x < 16 ? 64 : 32)", "they must agree"),
])
def test_named_barrier_operands_are_checked(ident, count, why):
    """A barrier number past 15, a count that is no multiple of 32 or more than the block
    holds, or lanes that disagree: faults naming the instruction's line."""
    barrier_fault(f'asm volatile("bar.sync %0, %1;" :: "r"({ident}), "r"({count}));', 64,
                  "bad_bar.cu", why + r"(.|\n)*bad_bar\.cu:3")


@emulator
def test_threads_of_a_warp_at_two_barriers_is_a_fault():
    """Half a warp at a named barrier while the other half waits at __syncthreads (or
    __syncthreads_count, or another named barrier) can never go on: a fault that says so,
    not a hang."""
    for other in ("__syncthreads();", "(void)__syncthreads_count(1);", 'asm volatile("bar.sync 2, 32;");'):
        barrier_fault('if (threadIdx.x < 16) asm volatile("bar.sync 1, 32;");\n        else ' + other,
                      32, "half.cu", "threads of one warp wait at two barriers")


@pytest.mark.gpu
def test_bar_sync_without_a_count_is_that_barrier_of_the_whole_block(rng):
    """bar.sync 3 alone: barrier 3 of every thread of the block (as bar.sync 0 is
    __syncthreads), here between a warp that writes shared memory and warps that read it."""
    mod = cukit.compile(r"""
    extern "C" __global__ void k(const int* in, int* out) {
        __shared__ int sh[32];
        const int t = threadIdx.x;
        if (t < 32) sh[t] = in[blockIdx.x * 32 + t] * 3;
        asm volatile("bar.sync 3;" ::: "memory");
        out[blockIdx.x * blockDim.x + t] = sh[31 - (t & 31)] + t;
    }
    """, name="bar3.cu")
    h = rng.integers(-1000, 1000, 4 * 32).astype(np.int32)
    out = cukit.zeros(4 * 128, np.int32)
    mod.k(cukit.to_device(h), out, grid=4, block=128)
    t = np.arange(128)
    want = (3 * h.reshape(4, 32)[:, 31 - (t & 31)] + t).reshape(-1)
    np.testing.assert_array_equal(out.get(), want)


@emulator
def test_warps_at_two_barriers_without_a_count_is_a_fault():
    """bar.sync 1 and bar.sync 2 without counts each wait for every thread of the block:
    warps split between them would hang on a GPU; the emulator faults, naming both."""
    barrier_fault('if (threadIdx.x < 32) asm volatile("bar.sync 1;");\n'
                  '        else asm volatile("bar.sync 2;");', 64, "split.cu",
                  r"warp 0 waits at barrier 1 and warp 1 at barrier 2, each for every thread")
    barrier_fault('if (threadIdx.x < 32) __syncthreads();\n'
                  '        else asm volatile("bar.sync 5;");', 64, "split0.cu",
                  r"warp 0 waits at barrier 0 and warp 1 at barrier 5")


@emulator
@pytest.mark.parametrize("inst,why", [
    ('asm volatile("bar.sync %0;" :: "r"(16));', "bar.sync 16: a block has barriers 0 to 15"),
    ('asm volatile("bar.sync %0;" :: "r"(threadIdx.x & 1));',
     "name different barriers in one bar.sync.*they must agree"),
    ('asm volatile("{ .reg .pred p; .reg .u32 r; setp.ne.u32 p, %0, 0; bar.red.popc.u32 r, '
     '%1, p; }" :: "r"(threadIdx.x), "r"(17));', "bar.red 17: a block has barriers 0 to 15"),
])
def test_barrier_numbers_without_a_count_are_checked(inst, why):
    barrier_fault(inst, 64, "bad_full.cu", why + r"(.|\n)*bad_full\.cu:3")


# ------------------------------------------------------------------ printf

@emulator
def test_printf_prints_in_thread_order(capfd):
    mod = cukit.compile(r"""
    extern "C" __global__ void hello(const float* x) {
        printf("thread %d of block %u: %.2f %s %lld\n", (int)threadIdx.x, blockIdx.x, x[threadIdx.x],
               threadIdx.x % 2 ? "odd" : "even", -5000000000LL + threadIdx.x);
    }
    """)
    mod.hello(cukit.to_device(np.arange(4, dtype=np.float32) / 4), grid=2, block=4)
    cukit.synchronize()
    out = capfd.readouterr().out.splitlines()
    want = [f"thread {t} of block {b}: {t / 4:.2f} {'odd' if t % 2 else 'even'} {-5000000000 + t}"
            for b in range(2) for t in range(4)]
    assert out == want


# ------------------------------------------------------------------ warps, atomics, numerics

WARP = r"""
extern "C" __global__ void warp_ops(const int* x, int* sums, unsigned* ballots, int* shifted,
                                    int* votes) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    int v = x[i];
    int s = v;
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    sums[i] = s;
    ballots[i] = __ballot_sync(0xffffffffu, v > 0);
    shifted[i] = __shfl_down_sync(0xffffffffu, v, 3);
    votes[i] = __all_sync(0xffffffffu, v > -1000) + 2 * __any_sync(0xffffffffu, v > 90);
    (void)lane;
}

extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    // the warp-synchronous volatile idiom: needs lanes in lockstep
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * 256 + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = 128; k > 32; k /= 2) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < 32) {
        volatile float* v = s;
        v[t] += v[t + 32]; v[t] += v[t + 16]; v[t] += v[t + 8];
        v[t] += v[t + 4]; v[t] += v[t + 2]; v[t] += v[t + 1];
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

extern "C" __global__ void histogram(const int* x, int* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[x[i]], 1);
}

extern "C" __global__ void divergent(const int* x, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i], steps = 0;
    while (v != 1 && steps < 1000) {      // Collatz: every lane a different trip count
        v = (v & 1) ? 3 * v + 1 : v / 2;
        steps++;
    }
    if (steps % 3 == 0) y[i] = steps; else if (steps % 3 == 1) y[i] = -steps; else y[i] = 0;
}
"""


def collatz(v):
    steps = 0
    while v != 1 and steps < 1000:
        v = 3 * v + 1 if v & 1 else v // 2
        steps += 1
    return steps


@emulator
def test_shuffles_votes_ballots_per_warp(rng):
    mod = cukit.compile(WARP)
    n = 256
    x = rng.integers(-100, 100, n, dtype=np.int32)
    outs = [cukit.to_device(poison(n, t)) for t in (np.int32, np.uint32, np.int32, np.int32)]
    mod.warp_ops(cukit.to_device(x), *outs, grid=2, block=128)
    sums, ballots, shifted, votes = (o.get() for o in outs)
    w = x.reshape(-1, 32)
    np.testing.assert_array_equal(sums, np.repeat(w.sum(1), 32))
    bits = (w > 0).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    np.testing.assert_array_equal(ballots, np.repeat(bits.sum(1).astype(np.uint32), 32))
    want = np.where(np.arange(32) + 3 < 32, np.roll(w, -3, axis=1), w).ravel()
    np.testing.assert_array_equal(shifted, want)
    np.testing.assert_array_equal(votes, np.repeat(1 + 2 * (w > 90).any(1), 32))


@emulator
def test_warp_synchronous_reduction_atomics_and_divergence(rng):
    mod = cukit.compile(WARP)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    out = cukit.to_device(poison(4, np.float32))
    mod.block_sum(cukit.to_device(x), out, n, grid=4, block=256)
    np.testing.assert_allclose(out.get(), np.pad(x, (0, 24)).reshape(4, 256).sum(1), rtol=1e-5,
                               atol=1e-5)
    keys = rng.integers(0, 50, 20000, dtype=np.int32)
    bins = cukit.zeros(50, np.int32)
    mod.histogram(cukit.to_device(keys), bins, len(keys), grid=79, block=256)
    np.testing.assert_array_equal(bins.get(), np.bincount(keys, minlength=50))
    v = rng.integers(1, 10000, 3000, dtype=np.int32)
    y = cukit.to_device(poison(len(v), np.int32))
    mod.divergent(cukit.to_device(v), y, len(v), grid=12, block=256)
    steps = np.array([collatz(int(a)) for a in v])
    np.testing.assert_array_equal(y.get(), np.where(steps % 3 == 0, steps,
                                                    np.where(steps % 3 == 1, -steps, 0)))


@emulator
def test_integer_bit_operations_and_rounding_modes(rng):
    mod = cukit.compile(r"""
    extern "C" __global__ void bits(const unsigned* a, const unsigned* b, unsigned* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned x = a[i], y = b[i];
        out[6 * i + 0] = __popc(x);
        out[6 * i + 1] = __clz(x);
        out[6 * i + 2] = __brev(x);
        out[6 * i + 3] = __umulhi(x, y);
        out[6 * i + 4] = (x >> (y & 31)) | (x << (32 - (y & 31)));  // a rotate: shf
        out[6 * i + 5] = (unsigned)((int)x / (int)(y | 1));
    }
    extern "C" __global__ void rounding(const float* a, const float* b, float* f, int* k, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        f[4 * i + 0] = __fadd_rz(a[i], b[i]);
        f[4 * i + 1] = __fmul_ru(a[i], b[i]);
        f[4 * i + 2] = __fdiv_rd(a[i], b[i]);
        f[4 * i + 3] = __fsqrt_rn(fabsf(a[i]));
        k[4 * i + 0] = __float2int_rn(a[i] * 1000.0f);
        k[4 * i + 1] = __float2int_rz(a[i] * 1000.0f);
        k[4 * i + 2] = __float2int_rd(a[i] * 1000.0f);
        k[4 * i + 3] = __float2int_ru(a[i] * 1e9f);   // saturates past 2^31
    }
    """)
    n = 2000
    a = rng.integers(0, 2**32, n, dtype=np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint32)
    out = cukit.to_device(poison(6 * n, np.uint32))
    mod.bits(cukit.to_device(a), cukit.to_device(b), out, n, grid=8, block=256)
    got = out.get().reshape(n, 6)
    a64, b64 = a.astype(np.uint64), b.astype(np.uint64)
    np.testing.assert_array_equal(got[:, 0], [bin(int(v)).count("1") for v in a])
    np.testing.assert_array_equal(got[:, 1], [32 - int(v).bit_length() for v in a])
    np.testing.assert_array_equal(got[:, 2], [int(f"{int(v):032b}"[::-1], 2) for v in a])
    np.testing.assert_array_equal(got[:, 3], (a64 * b64) >> np.uint64(32))
    s = b64 & np.uint64(31)
    rot = ((a64 >> s) | (a64 << ((np.uint64(32) - s) % np.uint64(64)))) & np.uint64(0xffffffff)
    np.testing.assert_array_equal(got[:, 4], np.where(s == 0, a64, rot))
    q = [int(np.trunc(int(x) / int(y))) for x, y in zip(a.view(np.int32), (b | 1).view(np.int32))]
    np.testing.assert_array_equal(got[:, 5].view(np.int32), q)

    fa = rng.standard_normal(n).astype(np.float32)
    fb = (rng.standard_normal(n) + 3).astype(np.float32)
    f = cukit.to_device(poison(4 * n, np.float32))
    k = cukit.to_device(poison(4 * n, np.int32))
    mod.rounding(cukit.to_device(fa), cukit.to_device(fb), f, k, n, grid=8, block=256)
    got, ks = f.get().reshape(n, 4), k.get().reshape(n, 4)

    def directed(exact, toward):
        near = exact.astype(np.float32)
        up = np.nextafter(near, np.float32(np.inf))
        down = np.nextafter(near, np.float32(-np.inf))
        if toward == "zero":
            over = np.abs(near.astype(np.float64)) > np.abs(exact)
            return np.where(over, np.where(near > 0, down, up), near)
        if toward == "up":
            return np.where(near.astype(np.float64) < exact, up, near)
        return np.where(near.astype(np.float64) > exact, down, near)

    a64, b64 = fa.astype(np.float64), fb.astype(np.float64)
    np.testing.assert_array_equal(got[:, 0], directed(a64 + b64, "zero"))
    np.testing.assert_array_equal(got[:, 1], directed(a64 * b64, "up"))
    # a/b in double is not exact; it decides the direction unless it rounds to a float
    q = a64 / b64
    exact_q = q.astype(np.float32).astype(np.float64) == q
    np.testing.assert_array_equal(got[~exact_q, 2], directed(q, "down")[~exact_q])
    np.testing.assert_array_equal(got[:, 3], np.sqrt(np.abs(fa)))
    scaled = fa * np.float32(1000)
    np.testing.assert_array_equal(ks[:, 0], np.rint(scaled).astype(np.int32))
    np.testing.assert_array_equal(ks[:, 1], np.trunc(scaled).astype(np.int32))
    np.testing.assert_array_equal(ks[:, 2], np.floor(scaled).astype(np.int32))
    big = np.ceil(fa.astype(np.float64) * np.float32(1e9).astype(np.float64))
    big = (fa * np.float32(1e9)).astype(np.float64)
    np.testing.assert_array_equal(ks[:, 3], np.clip(np.ceil(big), -2**31, 2**31 - 1).astype(np.int64))


@emulator
def test_module_variables_and_device_attributes():
    mod = cukit.compile(r"""
    __constant__ float coef[4];
    __device__ int counter;
    extern "C" __global__ void apply(const float* x, float* y) {
        y[threadIdx.x] = coef[threadIdx.x % 4] * x[threadIdx.x];
        atomicAdd(&counter, 1);
    }
    """)
    mod.get_global("coef").set(np.array([1, 2, 3, 4], np.float32))
    x = np.arange(8, dtype=np.float32)
    y = cukit.empty(8, np.float32)
    mod.apply(cukit.to_device(x), y, grid=3, block=8)
    np.testing.assert_array_equal(y.get(), x * np.tile([1, 2, 3, 4], 2))
    assert mod.get_global("counter").get() == 24
    dev = cukit.Device(0)
    assert "emulator" in dev.name and dev.arch == "sm_90"
    assert dev.attributes["warp_size"] == 32 and dev.attributes["max_threads_per_block"] == 1024
    assert dev.attributes["max_shared_memory_per_block"] == 48 * 1024
    assert dev.attributes["max_shared_memory_per_block_optin"] == 227 * 1024


# ------------------------------------------------------------------ the backend switch

def test_backend_switch_by_environment_and_call():
    out = run("""
        import cukit
        cukit.set_backend("emulator")
        print(cukit.backend(), cukit.Device(0).name)
        cukit.set_backend("emulator")          # the same again: fine
        try:
            cukit.set_backend("gpu")
        except RuntimeError as e:
            print("LATE", e)
        try:
            cukit.set_backend("tpu")
        except ValueError as e:
            print("BAD", e)
    """, CUKIT_BACKEND=None)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("emulator cukit emulator (PTX on the CPU, sm_90)")
    assert "LATE the backend is already chosen (emulator)" in out.stdout
    assert "BAD unknown backend 'tpu'" in out.stdout
    assert out.stderr == ""  # chosen explicitly: no fallback note

    out = run("""
        import cukit
        try:
            cukit.device_count(); cukit.Device(0)
        except cukit.NoDeviceError as e:
            print("NODEV", e)
    """, CUKIT_BACKEND="gpus")
    assert "NODEV" in out.stdout and "must be auto, gpu or emulator" in out.stdout

    out = run("import cukit; print(cukit.backend(), cukit.Device(0).arch)",
              CUKIT_BACKEND="emulator", CUKIT_EMULATOR_ARCH="sm_80")
    assert out.stdout.split() == ["emulator", "sm_80"], out.stderr


def test_the_emulated_memory_size():
    """Half the host's memory by default (it holds the host's copies too), or
    CUKIT_EMULATOR_MEMORY; more than that is OutOfMemoryError, as on a GPU."""
    code = """
        import os, numpy as np, cukit
        total = cukit.Device(0).total_memory
        print(total, os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGESIZE"))
        try:
            cukit.empty(total + 1, np.uint8)
        except cukit.OutOfMemoryError as e:
            print("OOM", e)
        a = cukit.empty(1 << 20, np.uint8)
        print("free", cukit.memory_info()["free"])
    """
    out = run(code, CUKIT_BACKEND="emulator", CUKIT_EMULATOR_MEMORY=None)
    assert out.returncode == 0, out.stderr
    total, phys = map(int, out.stdout.split()[:2])
    assert total == phys // 2
    for value, want in [("3G", 3 << 30), ("1536M", 1536 << 20), ("2.5GB", 5 << 29),
                        ("1048576", 1 << 20)]:
        out = run(code, CUKIT_BACKEND="emulator", CUKIT_EMULATOR_MEMORY=value)
        assert out.returncode == 0 or want <= (1 << 20), out.stderr
        assert int(out.stdout.split()[0]) == want, (value, out.stdout)
        assert f"could not allocate {want + 1} bytes" in out.stdout
    out = run(code, CUKIT_BACKEND="emulator", CUKIT_EMULATOR_MEMORY="3G")
    free = [int(line.split()[1]) for line in out.stdout.splitlines() if line.startswith("free ")]
    assert free and free[0] <= (3 << 30) - (1 << 20)


def test_an_allocation_that_runs_the_garbage_collector_does_not_deadlock():
    """The emulator names the Python line of each allocation; reading the frames may run
    the collector, whose frees must not wait for a lock the allocation holds."""
    out = run("""
        import gc, cukit
        cukit._keep_freed(False)                  # frees go to the pool at once
        class Cycle:
            __slots__ = ("me", "a")
        def alloc():                              # a frame the emulator reads afresh
            return cukit.alloc(4096)
        gc.set_threshold(1, 1000, 1000)           # every allocation may collect
        for i in range(200):
            gc.disable()
            for _ in range(3):                    # garbage only the collector frees
                c = Cycle(); c.me = c; c.a = cukit.alloc(4096)
            del c
            gc.enable()
            b = alloc()
        print("ok")
    """, CUKIT_BACKEND="emulator")
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_auto_falls_back_to_the_emulator_with_one_line_saying_why():
    out = run("""
        import cukit
        cukit.device_count(); cukit.device_count()
        print(cukit.backend())
    """, CUKIT_BACKEND="auto")
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() == "gpu":
        pytest.skip("this machine has a GPU, so auto does not fall back")
    assert out.stdout.strip() == "emulator"
    lines = out.stderr.splitlines()  # one short line, once
    assert len(lines) == 1 and "kernels run on the CPU emulator" in lines[0]
    assert lines[0].startswith("cukit: no GPU (") and "CUKIT_BACKEND=emulator" in lines[0]
    assert len(lines[0]) < 130, lines[0]

    out = run("""
        import cukit
        try:
            cukit.Device(0)
        except cukit.NoDeviceError as e:
            print("NODEV")
        print(cukit.device_count())
    """, CUKIT_BACKEND="gpu")
    assert out.stdout.split() == ["NODEV", "0"]


# ------------------------------------------------------------------ against a GPU


def nvrtc_libraries():
    """The NVRTC libraries installed: the CUDA toolkit's and the nvidia-cuda-nvrtc wheel's
    (the one `pip install cukit[nvrtc]` brings), each as (label, path). NVRTC versions
    emit different code for the same source (13.5 addresses shared memory as [%r + imm]
    with a 32-bit register; 13.0 did not), so the corpus runs with each."""
    import glob
    import importlib.util
    found = []
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    toolkit = sorted(glob.glob(os.path.join(home, "lib64", "libnvrtc.so.[0-9]*")))
    if toolkit:
        found.append(("toolkit", toolkit[0]))
    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        wheel = sorted(glob.glob(os.path.join(folder, "*", "lib", "libnvrtc.so.[0-9]*")))
        if wheel:
            found.append(("wheel", wheel[0]))
            break
    return found or [("default", None)]


NVRTCS = nvrtc_libraries()


def nvrtc_env(path):
    env = dict(os.environ)
    if path:
        env["CUKIT_NVRTC"] = path
    return env


@pytest.mark.gpu
@pytest.mark.gpu_hardware
@pytest.mark.parametrize("nvrtc", NVRTCS, ids=[label for label, _ in NVRTCS])
def test_differential_corpus_matches_the_gpu(tmp_path, nvrtc):
    """tests/differential.py's corpus on the GPU and on the emulator, compiled by each
    NVRTC installed: integer and IEEE-exact results bit for bit, approximate ones within
    bounds."""
    script = os.path.join(os.path.dirname(__file__), "differential.py")
    out = subprocess.run([sys.executable, script, "check", str(tmp_path)], capture_output=True,
                         text=True, timeout=1800, env=nvrtc_env(nvrtc[1]))
    print(out.stdout)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert out.stdout.splitlines()[-1].endswith(" 0 differ")


def _diverge(v):
    """differential.py's diverge kernel for one thread, with C's 32-bit wrapping."""
    wrap = lambda x: (x + 2**31) % 2**32 - 2**31  # noqa: E731
    steps = acc = 0
    while v != 1 and steps < 500:
        if v & 1:
            v = wrap(3 * v + 1)
            acc ^= v
        else:
            v >>= 1
            acc = wrap(acc + v)
        if (acc & 63) == 5:
            break
        steps += 1
    return wrap(acc + 1 if steps & 3 == 0 else acc * 3 if steps & 3 == 1 else acc - steps)


@emulator
@pytest.mark.parametrize("nvrtc", NVRTCS, ids=[label for label, _ in NVRTCS])
def test_differential_corpus_runs_on_the_emulator(tmp_path, nvrtc):
    """The corpus the GPU comparison uses runs here, compiled by each NVRTC installed, and
    what numpy can check is right."""
    script = os.path.join(os.path.dirname(__file__), "differential.py")
    path = str(tmp_path / "emu.npz")
    out = subprocess.run([sys.executable, script, "run", path], capture_output=True, text=True,
                         timeout=900, env=nvrtc_env(nvrtc[1]))
    assert out.returncode == 0, out.stderr
    sys.path.insert(0, os.path.dirname(script))
    try:
        import differential
    finally:
        sys.path.pop(0)
    saved = np.load(path)
    a, b, f, g, h, d, e, ints, coll = differential.inputs()
    np.testing.assert_array_equal(saved["ints"].reshape(-1, 32)[:, 0], a + b)
    np.testing.assert_array_equal(saved["diverge"][:200], [_diverge(int(v)) for v in coll[:200]])
    np.testing.assert_array_equal(saved["reduce_sum_i32"], ints.reshape(64, -1).sum(1))
    np.testing.assert_array_equal(saved["cumsum_i32"], np.cumsum(ints).astype(np.int32))
    ref = np.random.Generator(np.random.Philox(20261123))
    np.testing.assert_array_equal(saved["random_f64"], ref.random(differential.N * 4))
    np.testing.assert_allclose(saved["ufunc_exp_f64"], np.exp(d * 0.01), rtol=1e-15)
    np.testing.assert_allclose(saved["ufunc_sin_f32"], np.sin(f[8:]), rtol=1e-6, atol=1e-6)
    z, w = d * 0.01 + 1j * e, e + 1j * d * 0.01
    np.testing.assert_allclose(saved["complex_mul_c128"].view(np.complex128), z * w, rtol=1e-14)
    np.testing.assert_allclose(saved["complex_log10_c128"].view(np.complex128), np.log10(z),
                               rtol=1e-14, atol=1e-15)
    img = h[:37 * 53].reshape(37, 53)
    k = np.arange(4096)
    xs = ((k * 0.7311) % 59 - 3).astype(np.float32)
    ys = ((k * 0.3177) % 43 - 3).astype(np.float32)
    for gen in ("philox", "xorwow"):  # cuRAND's device API: plausible draws
        u = saved[f"curand_{gen}_uniform"]
        assert np.all((u > 0) & (u <= 1)) and abs(u.mean() - 0.5) < 0.05
        assert abs(saved[f"curand_{gen}_normal_f64"].std() - 1) < 0.1
        assert abs(saved[f"curand_{gen}_poisson"].mean() - 3.5) < 0.3
        assert len(np.unique(saved[f"curand_{gen}_bits"])) > 2000
    np.testing.assert_array_equal(saved["fresh_memory"], 0)
    c32 = saved["carry_chains"].reshape(-1, 6).astype(np.int64)
    x, y, z = a.astype(np.int64), b.astype(np.int64), np.roll(a, -1).astype(np.int64)
    m32 = 2**32 - 1
    no_borrow = (x >= y).astype(np.int64)
    np.testing.assert_array_equal(c32[:, 0], (x - y) & m32)
    np.testing.assert_array_equal(c32[:, 1], (2 * z + no_borrow) & m32)
    carry = ((x + y) >> 32) & 1
    np.testing.assert_array_equal(c32[:, 3], (z + (~y & m32) + carry) & m32)
    np.testing.assert_array_equal(c32[:, 5], (x * y + z + no_borrow) & m32)
    w = saved["int128"].reshape(-1, 14)
    for i in range(0, len(w), 97):
        X = int(a[i]) << 32 | int(b[i])
        Y = int(a[(i + 1) % len(a)]) << 32 | (int(a[i]) ^ int(b[i]))
        p, q = X << 64 | Y, (((Y | 1) << (int(a[i]) & 63)) | (int(b[i]) | 1)) % 2**128
        got = [int(w[i, 2 * k]) | int(w[i, 2 * k + 1]) << 64 for k in range(6)]
        assert got[:2] == [p // q, p % q] and got[4:] == [p * q % 2**128, (p - q) % 2**128]
        assert [int(w[i, 12]), int(w[i, 13])] == [X, Y]
    np.testing.assert_array_equal(saved["tex_point_clamp"],
                                  img[np.clip(np.floor(ys), 0, 36).astype(int),
                                      np.clip(np.floor(xs), 0, 52).astype(int)])
    r = subprocess.run([sys.executable, script, "compare", path, path], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout.splitlines()[-1].endswith(" 0 differ"), r.stdout


@emulator
def test_device_functions_that_nvrtc_keeps_are_inlined(rng):
    mod = cukit.compile(r"""
    __device__ __noinline__ float scale(float v, int k) {
        if (k & 1) return v * 3.0f;
        return v - 1.0f;
    }
    __device__ __noinline__ float twice(float v, int k) { return scale(scale(v, k), k + 1) + k; }
    extern "C" __global__ void apply(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = twice(x[i], i);
    }
    """)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = cukit.to_device(poison(n, np.float32))
    mod.apply(cukit.to_device(x), y, n, grid=4, block=256)
    k = np.arange(n)
    first = np.where(k & 1, x * np.float32(3), x - np.float32(1)).astype(np.float32)
    second = np.where((k + 1) & 1, first * np.float32(3), first - np.float32(1)).astype(np.float32)
    np.testing.assert_array_equal(y.get(), second + k.astype(np.float32))
    with pytest.raises(cukit.NotSupportedError, match="recursive function"):
        cukit.compile(r"""
        __device__ __noinline__ int fib(int v) { return v < 2 ? v : fib(v - 1) + fib(v - 2); }
        extern "C" __global__ void f(int* p) { p[0] = fib(p[0]); }
        """)


# What an H200 (sm_90) gives for the `nans` kernel of tests/differential.py: per input,
# float32 x + 1, x * y, fmaf(x, 2, y), sqrtf(x), fminf(x, y), (float)X, -x, fabsf(x);
# float64 X + 1, X * Y, fma(X, 2, Y), sqrt(X), fmin(X, Y), (double)x; half h(x), h + 1.5,
# h * h, fma(h, 1.5, 1.5). float32 and half arithmetic give the canonical NaN; float64
# keeps a payload and, of two NaNs, returns the last operand's; min and max ignore a NaN.
NANS_F32 = """
7fffffff 7fffffff 7fffffff 7fffffff 7fffffff 7fc00000 7fffffff 7fffffff 7fffffff 7fffffff 7fffffff
7fffffff 7fffffff ffc00000 7fffffff 7fffffff 7fffffff 7fffffff 7fffffff 7fffffff 7fffffff 7fc00000
7fffffff 7fffffff 7fffffff 7fffffff 7fffffff 7fffffff 3f800000 7fc091a2 7fffffff 7fffffff 40000000
7fffffff 7fffffff 3f800000 3f800000 3f800000 bf800000 3f800000 7fffffff 7fffffff 7fffffff 7fffffff
7f800000 ffc00000 7fffffff 7fffffff 7f800000 7f800000 7f800000 7f800000 00000001 7f800000 ff800000
7f800000 3f800000 7fffffff 7fffffff 1a3504f3 00000001 00000000 80000001 00000001
"""
NANS_F64 = """
7ff8000000000000 fff8000000000000 fff8000000000000 7ff8000000000000 fff8000000000000 7ff8000000000000
fff8000000000000 7ff8000000000001 7ff8000000000001 fff8000000000000 7ff8000000000001 fff8000000000000
7ff8000000000001 7ff8123456789abc 7ff8123456789abc 7ff8000000000001 7ff8123456789abc 7ff8000020000000
7ff8123456789abc 7ff8123456789abc 7ff8123456789abc 7ff8123456789abc 3ff0000000000000 7ff82468a0000000
4000000000000000 fff8000000000123 fff8000000000123 3ff0000000000000 3ff0000000000000 3ff0000000000000
fff8000000000123 fff8000000000123 fff8000000000123 fff8000000000123 7ff0000000000000 fff82468a0000000
7ff0000000000000 7ff0000000000000 7ff0000000000000 7ff0000000000000 0000000000000001 7ff0000000000000
3ff0000000000000 7ff8000000000000 7ff8000000000000 1e60000000000000 0000000000000001 36a0000000000000
"""
NANS_F16 = """
7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 7fff 3c00 4100 3c00 4200
7fff 7fff 7fff 7fff 7c00 7c00 7c00 7c00 0000 3e00 0000 3e00
"""


@pytest.mark.gpu
def test_nan_results_are_the_gpus_bit_for_bit():
    import differential
    mod = cukit.compile(differential.CORPUS, name="corpus.cu")
    f32, f64 = differential.NAN_INPUTS
    o32, o64, o16 = cukit.zeros(64, np.uint32), cukit.zeros(48, np.uint64), cukit.zeros(32, np.uint16)
    mod.nans(cukit.to_device(f32), cukit.to_device(f64), o32, o64, o16, 8, grid=1, block=8)
    for got, want, width in ((o32, NANS_F32, 8), (o64, NANS_F64, 16), (o16, NANS_F16, 4)):
        want = [int(w, 16) for w in want.split()]
        got = [int(v) for v in got.get()]
        bad = [(i, f"{g:0{width}x}", f"{w:0{width}x}") for i, (g, w) in enumerate(zip(got, want)) if g != w]
        assert not bad, f"(output, got, want): {bad}"



@emulator
def test_the_pool_keeps_no_more_than_a_few_times_what_was_in_use(rng):
    """The soak's pattern: a few arrays of random sizes alive, one freed as one comes.
    A cached block fits a new size only now and then; the pool gives cached blocks back
    rather than keeping each (it reserved 13 times the most ever in use after 3000
    allocations, and grew on without end under the soak)."""
    gc.collect()
    cukit.trim_pool()
    held = cukit.memory_info()["pool_used"]  # what earlier tests' objects still hold
    live, peak = [], 0
    for _ in range(3000):
        live.append(cukit.empty(int(rng.integers(1, 1 << 18)), np.uint32))
        if len(live) > 4:
            live.pop(int(rng.integers(0, len(live)))).free()
        peak = max(peak, sum(a.nbytes for a in live))
    for a in live:
        a.free()
    assert cukit.memory_info()["pool_reserved"] - held <= 6 * peak
    cukit.trim_pool()
    info = cukit.memory_info()
    assert info["pool_reserved"] == info["pool_used"] == held


@emulator
def test_measure_approx_runs_in_one_command_and_writes_its_table(tmp_path):
    """tools/measure_approx.py (the GPU's .approx bits against the emulator's) with both
    sides on the emulator: the plumbing a GPU run relies on, the JSON, the table for the
    docs, and going on where a run stopped."""
    tool = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "measure_approx.py")
    out = str(tmp_path / "approx.json")
    cmd = [sys.executable, tool, "--against", "emulator", "--step", "1048573", "--out", out]
    r = subprocess.run(cmd + ["sin.approx.f32", "rcp.approx.ftz.f32"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    import json
    saved = json.load(open(out))
    assert saved["settings"] == {"step": 1048573, "against": "emulator"}
    for instr in ("sin.approx.f32", "rcp.approx.ftz.f32"):
        rep = saved["instructions"][instr]
        assert rep["inputs"] == -(-(1 << 32) // 1048573) == 4097 and rep["differ"] == 0 and rep["nan_mismatch"] == 0
        assert 0 < rep["emulator_max_error"] < 2.0 ** -15
        assert os.path.exists(f"{out}.{instr}.npz")
    table = open(out + ".md").read()
    assert "| `sin.approx.f32` | 4,097 | 100.0000% | 0 | 0 | 0 |" in table
    r = subprocess.run(cmd + ["sin.approx.f32", "lg2.approx.f32"], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0 and "2 instructions measured already" in r.stdout, r.stderr
    assert list(json.load(open(out))["instructions"]) == [
        "sin.approx.f32", "rcp.approx.ftz.f32", "lg2.approx.f32"]
    bad = subprocess.run([sys.executable, tool, "exp.approx.f32"], capture_output=True, text=True)
    assert bad.returncode == 2 and "exp.approx.f32: not one of" in bad.stderr


@pytest.mark.parametrize("instr", ["rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64"])
def test_double_approx_ftz_results_keep_only_their_top_word(instr):
    """rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 work on the operand's top 32 bits and
    give a result whose low 32 bits are zero (measured on an H100 over every top-word
    mantissa at four exponents), within 2^-19 of the exact value; the emulator did not
    clear rsqrt's low word."""
    mod = cukit.compile(r"""
    extern "C" __global__ void k(const double* x, double* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) { double r; asm("%s %%0, %%1;" : "=d"(r) : "d"(x[i])); y[i] = r; }
    }""" % instr)
    rng = np.random.default_rng()
    n = 1 << 14
    x = np.exp(rng.uniform(-300, 300, n))
    y = cukit.empty(n, np.float64)
    mod.k(cukit.to_device(x), y, n, grid=n // 256, block=256)
    got = y.get()
    assert np.all(got.view(np.uint64) & np.uint64(0xFFFFFFFF) == 0)
    exact = 1 / x if instr.startswith("rcp") else 1 / np.sqrt(x)
    assert np.all(np.abs(got / exact - 1) < 2.0 ** -19)


@emulator
@pytest.mark.parametrize("inst, why", [
    ("ld.global.b128 q, [%1];", r"does not support 128-bit memory operations: 'ld.global.b128'"),
    ("add.u64 %0, q, 1;", r"does not support the 128-bit register 'q' outside mov.b128"),
    ("mul.hi.b128 q, q, q;", r"'mul.hi.b128' is not valid PTX: .b128 is a type of mov, ld, st"),
    ("mov.b128 %0, q;", r"its operand '%rd\d+' is not a .b128 register"),
])
def test_b128_beyond_mov_is_refused_with_the_reason(inst, why):
    src = ('extern "C" __global__ void k(unsigned long long* p) {\n'
           '    unsigned long long x = *p;\n'
           '    asm volatile("{ .reg .b128 q; mov.b128 q, {%0, %0}; ' + inst + ' }" '
           ': "+l"(x) : "l"(p));\n'
           '    *p = x;\n'
           '}\n')
    with pytest.raises(cukit.CudaError, match=why + r".* at b128.cu:3"):
        cukit.compile(src, name="b128.cu")



FUSE = """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p0)
{
  .reg .f32 %f<20>;
  .reg .f64 %fd<8>;
  .reg .pred %p<2>;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f40000000;
  mov.f32 %f3, 0f40400000;
  mul.f32 %f4, %f1, %f2;
  add.f32 %f5, %f4, %f3;          // fused: a*b + c
  mul.f32 %f6, %f1, %f3;
  sub.f32 %f7, %f2, %f6;          // fused: c - a*b
  mul.f32 %f8, %f1, %f2;
  add.f32 %f9, %f8, %f3;
  add.f32 %f10, %f8, %f9;         // %f8 read twice: not fused
  mul.rn.f32 %f11, %f1, %f2;
  add.f32 %f12, %f11, %f3;        // .rn: not fused
  mul.f32 %f13, %f1, %f2;
  add.rn.f32 %f14, %f13, %f3;     // .rn: not fused
  mul.f32 %f15, %f1, %f2;
  mov.f32 %f1, %f3;
  add.f32 %f16, %f15, %f3;        // an operand changed in between: not fused
  mul.f32 %f17, %f2, %f3;
  setp.gt.f32 %p1, %f17, %f3;
  @%p1 bra $L_skip;
$L_skip:
  add.f32 %f18, %f17, %f3;        // a label in between: not fused
  mul.f64 %fd1, %fd2, %fd3;
  sub.f64 %fd4, %fd1, %fd5;       // fused: a*b - c
  ret;
}
"""


def test_the_pairs_the_emulator_contracts():
    """The contraction rule (mul and add/sub without rounding, the product read once, in
    a straight run with its operands unchanged), counted by the function
    tools/contraction_check.py compares with ptxas's counts. Needs no device."""
    from cukit import _cukit
    assert _cukit._emulator_contractions(FUSE.encode()) == {"k": 3}
    with pytest.raises(ValueError, match="cannot read this PTX"):
        _cukit._emulator_contractions(b".version 8.0\n.target sm_90\nnonsense")


@pytest.mark.gpu_hardware
def test_contraction_check_runs_in_one_command():
    tool = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "contraction_check.py")
    r = subprocess.run([sys.executable, tool], capture_output=True, text=True, timeout=1800)
    print(r.stdout)
    assert r.returncode in (0, 1, 2), r.stderr
    if r.returncode != 2:
        assert re.search(r"\d+ kernels: ptxas contracts \d+ pairs, the emulator \d+; \d+ kernels "
                         r"differ", r.stdout.splitlines()[-1])
