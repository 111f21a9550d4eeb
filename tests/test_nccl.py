"""cukit.nccl: the loader, the dtype/op mapping and bad input (everywhere); every
collective against numpy on two GPUs, in one process (init_all) and in two spawned
processes; a dead peer raises within the timeout."""
import os
import pathlib
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cukit
import cukit.nccl as nccl

from conftest import DEVICES, HAVE_GPU

# Every test here uses all the GPUs there are: under pytest-xdist with --dist loadgroup
# (tools/gpu_check.sh) they run in one worker, not in every worker at once (24 workers
# each making communicators on 4 GPUs ran the GPUs out of memory for the whole suite).
pytestmark = pytest.mark.xdist_group("all_gpus")

HERE = pathlib.Path(__file__).resolve().parent
# the folder holding the cukit this process imported (installed or built in place)
SRC = pathlib.Path(nccl.__file__).resolve().parents[1]

try:
    NCCL_VERSION = nccl.version()
    NO_NCCL = None
except cukit.NotSupportedError as e:
    NCCL_VERSION = None
    NO_NCCL = str(e)

needs_nccl = pytest.mark.skipif(NCCL_VERSION is None, reason=f"libnccl not installed: {NO_NCCL}")


def run_python(code, env=None, timeout=120):
    full = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{HERE}")
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ everywhere


def test_nvls_is_off_in_the_test_environment():
    assert os.environ.get("NCCL_NVLS_ENABLE") == "0"
    out = run_python("import os; print(os.environ.get('NCCL_NVLS_ENABLE'))")
    assert out.stdout.strip() == "0", "subprocesses must inherit NCCL_NVLS_ENABLE=0"


def test_missing_library_says_what_to_install():
    out = run_python("""
        import cukit.nccl as nccl, cukit
        try:
            nccl.version()
        except cukit.NotSupportedError as e:
            print("RAISED", e)
    """, env={"CUKIT_NCCL": "/nonexistent/libnccl.so.2"})
    assert "RAISED" in out.stdout, out.stderr
    assert "pip install nvidia-nccl-cu13" in out.stdout
    assert "`pip install '.[nccl]'` in cukit's checkout" in out.stdout
    assert "CUKIT_NCCL=/nonexistent/libnccl.so.2" in out.stdout


def test_a_library_without_nccl_symbols_is_refused(tmp_path):
    """A library that is not NCCL (libc here) gives NotSupportedError, not a crash."""
    libc = next((p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6",
                             "/lib64/libc.so.6") if os.path.exists(p)), None)
    if libc is None:
        pytest.skip("no libc.so.6 at a known path")
    out = run_python("""
        import cukit.nccl as nccl, cukit
        try:
            nccl.version()
        except cukit.NotSupportedError as e:
            print("RAISED", e)
    """, env={"CUKIT_NCCL": libc})
    assert "RAISED" in out.stdout and "has no ncclGetVersion" in out.stdout, out.stdout + out.stderr


@pytest.mark.parametrize("dtype, want", [
    ("int8", (0, 1)), ("uint8", (1, 1)), ("int32", (2, 1)), ("uint32", (3, 1)),
    ("int64", (4, 1)), ("uint64", (5, 1)), ("float16", (6, 1)), ("float32", (7, 1)),
    ("float64", (8, 1)), ("complex64", (7, 2)), ("complex128", (8, 2)), ("bool", (1, 1)),
    ("int16", (1, 2)),
])
def test_dtype_mapping(dtype, want):
    assert cukit._cukit._nccl_datatype(dtype) == want


def test_bfloat16_maps_to_ncclBfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert cukit._cukit._nccl_datatype(ml_dtypes.bfloat16, "sum") == (9, 1)


@pytest.mark.parametrize("dtype, op, words", [
    ("int16", "sum", "NCCL cannot reduce int16"),
    ("int32", "avg", "avg needs a floating dtype"),
    ("bool", "sum", "NCCL cannot reduce bool"),
    ("complex64", "max", "complex: sum and avg only"),
    ("V8", None, "NCCL cannot carry elements"),
])
def test_unsupported_dtype_is_a_type_error(dtype, op, words):
    with pytest.raises(TypeError, match=words):
        cukit._cukit._nccl_datatype(dtype, op)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "avg"])
def test_ops_map_to_ncclRedOp(op):
    assert cukit._cukit._nccl_datatype("float32", op) == (7, 1)


def test_unknown_op_is_a_value_error():
    with pytest.raises(ValueError, match=r'op must be one of "sum", "prod", "min", "max", "avg"'):
        cukit._cukit._nccl_datatype("float32", "median")


def test_bad_unique_id():
    with pytest.raises(ValueError, match="unique_id must be the 128 bytes"):
        nccl.Communicator(2, b"short", 0)
    with pytest.raises(TypeError):
        nccl.Communicator(2, "not bytes" * 20, 0)


def test_bad_rank_and_timeout():
    with pytest.raises(ValueError, match=r"rank must be in 0..nranks-1"):
        nccl.Communicator(2, bytes(128), 2)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        nccl.Communicator(1, bytes(128), 0, timeout=-1)


@needs_nccl
def test_version_and_unique_id():
    assert len(NCCL_VERSION) == 3 and NCCL_VERSION >= (2, 13, 0)
    a, b = nccl.get_unique_id(), nccl.get_unique_id()
    assert isinstance(a, bytes) and len(a) == 128 and a != b
    assert pickle.loads(pickle.dumps(a)) == a


@needs_nccl
@pytest.mark.skipif(HAVE_GPU, reason="checks the error on a machine without a GPU")
def test_no_gpu_is_a_clear_error():
    with pytest.raises(cukit.NoDeviceError):
        nccl.Communicator(1, nccl.get_unique_id(), 0)


def test_from_env_needs_rank_when_world_size_is_set(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.delenv("RANK", raising=False)
    with pytest.raises(RuntimeError, match="RANK is not set; launch with torchrun"):
        nccl.from_env()


def test_from_mpi_without_mpi4py_says_so():
    try:
        import mpi4py  # noqa: F401
        pytest.skip("mpi4py is installed")
    except ImportError:
        pass
    with pytest.raises(ImportError, match="pip install mpi4py"):
        nccl.from_mpi()


# ------------------------------------------------------------------ one GPU


@needs_nccl
@pytest.mark.gpu
@pytest.mark.gpu_hardware  # NCCL needs real devices
def test_single_rank_communicator(rng):
    with nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=60) as comm:
        assert (comm.rank, comm.size, comm.device) == (0, 1, cukit.Device(0))
        x = rng.standard_normal(1000).astype(np.float32)
        a = cukit.to_device(x)
        out = cukit.empty(1000, np.float32)
        out.set(np.full(1000, np.nan, np.float32))
        comm.all_reduce(a, out, op="max")
        comm.synchronize()
        np.testing.assert_array_equal(out.get(), x)
    with pytest.raises(ValueError, match="the communicator was destroyed"):
        comm.all_reduce(a)


@needs_nccl
@pytest.mark.gpu
@pytest.mark.gpu_hardware  # NCCL needs real devices
def test_bad_arrays_are_refused_before_nccl(rng):
    with nccl.Communicator(1, nccl.get_unique_id(), 0) as comm:
        a = cukit.to_device(rng.standard_normal(64).astype(np.float32))
        with pytest.raises(TypeError, match="must be an array in GPU memory"):
            comm.all_reduce(np.zeros(64, np.float32))
        with pytest.raises(TypeError, match="send is float32 but recv is float64"):
            comm.all_reduce(a, cukit.empty(64, np.float64))
        with pytest.raises(ValueError, match="send has 64, recv has 32"):
            comm.all_reduce(a, cukit.empty(32, np.float32))
        with pytest.raises(ValueError, match="must be C-contiguous"):
            comm.all_reduce(cukit.to_device(np.zeros((8, 8), np.float32))[:, ::2])
        with pytest.raises(TypeError, match="NCCL cannot reduce int16"):
            comm.all_reduce(cukit.zeros(8, np.int16))
        with pytest.raises(ValueError, match="op must be one of"):
            comm.all_reduce(a, op="median")
        with pytest.raises(ValueError, match=r"root must be a rank in 0..0, got 3"):
            comm.broadcast(a, root=3)
        with pytest.raises(ValueError, match="peer must be a rank"):
            comm.send(a, 1)
        with pytest.raises(ValueError, match="NCCL has no in-place all-to-all"):
            comm.all_to_all(a, a)


# ------------------------------------------------------------------ two GPUs, one process

import nccl_cases  # noqa: E402


@pytest.fixture(scope="module")
def comms():
    if NCCL_VERSION is None or DEVICES < 2:
        pytest.skip("needs libnccl and 2 GPUs")
    cs = nccl.init_all(list(range(DEVICES)), timeout=120)  # every GPU there is
    yield cs
    for c in cs:
        c.destroy()


def backends():
    out = [nccl_cases.CukitArrays]
    try:
        import torch  # noqa: F401

        out.append(nccl_cases.TorchTensors)
    except ImportError:
        pass
    return out


@needs_nccl
@pytest.mark.multi_gpu
@pytest.mark.parametrize("backend", backends(), ids=lambda b: b.name)
@pytest.mark.parametrize("case", nccl_cases.cases(), ids=lambda c: "-".join(map(str, c)))
def test_collective_init_all(comms, backend, case, rng):
    b = backend()
    if case[2] == "bfloat16" and not b.bfloat16:
        pytest.skip("cukit's bfloat16 host arrays need ml_dtypes")
    assert [c.rank for c in comms] == list(range(DEVICES))
    assert [c.device for c in comms] == [cukit.Device(i) for i in range(DEVICES)]
    nccl_cases.run_case(comms, DEVICES, int(rng.integers(1 << 30)), b, *case)


@needs_nccl
@pytest.mark.multi_gpu
def test_split_into_singletons(comms, rng):
    """Each GPU's rank splits off alone; one thread per rank (split is collective)."""
    import threading

    subs = [None] * len(comms)

    def split(i):
        subs[i] = comms[i].split(comms[i].rank)

    threads = [threading.Thread(target=split, args=(i,)) for i in range(len(comms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert [(s.rank, s.size) for s in subs] == [(0, 1)] * len(comms)
    finally:
        for s in subs:
            s.destroy()


# ------------------------------------------------------------------ two GPUs, two processes

WORKER = """
    import os, sys, numpy as np
    import cukit, cukit.nccl as nccl, nccl_cases
    rank, seed = int(os.environ["RANK"]), int(os.environ["SEED"])
    size = int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(open(os.environ["UID_FILE"]).read())
    comm = nccl.Communicator(size, uid, rank, device=rank, timeout=120)
    n = nccl_cases.run_all([comm], size, seed, nccl_cases.CukitArrays())
    try:
        import torch
        n += nccl_cases.run_all([comm], size, seed, nccl_cases.TorchTensors())
    except ImportError:
        pass
    comm.destroy()
    print("CASES", n)
"""


def spawn(code, tmp_path, seed, env=None, timeout=300, nranks=None):
    """One process per GPU (every GPU there is, or nranks), RANK and WORLD_SIZE set."""
    uid_file = tmp_path / "uid"
    uid_file.write_text(nccl.get_unique_id().hex())
    procs = []
    nranks = nranks or max(cukit.device_count(), 2)
    for rank in range(nranks):
        full = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{HERE}", RANK=str(rank),
                    WORLD_SIZE=str(nranks), SEED=str(seed), UID_FILE=str(uid_file))
        full.update(env or {})
        procs.append(subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=full,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
        outs.append((p.returncode, out, err))
    return outs


@needs_nccl
@pytest.mark.multi_gpu
def test_two_processes_every_collective(tmp_path, rng):
    outs = spawn(WORKER, tmp_path, int(rng.integers(1 << 30)))
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0 and "CASES" in out, f"rank {rank}:\n{out}\n{err[-3000:]}"
    counts = {int(out.split("CASES")[1]) for _, out, _ in outs}
    assert len(counts) == 1 and counts.pop() >= len(nccl_cases.cases(False))


DEAD_PEER = """
    import os, sys, time, numpy as np
    import cukit, cukit.nccl as nccl
    rank = int(os.environ["RANK"])
    uid = bytes.fromhex(open(os.environ["UID_FILE"]).read())
    comm = nccl.Communicator(2, uid, rank, device=rank, timeout=10)
    x = cukit.to_device(np.ones(1 << 20, np.float32), device=rank)
    comm.all_reduce(x)
    comm.synchronize()
    if rank == 1:
        os._exit(0)  # dies without a word; rank 0's next all_reduce has no peer
    time.sleep(1)
    start = time.monotonic()
    try:
        comm.all_reduce(x)
        comm.synchronize()
        print("NO ERROR")
    except nccl.NcclError as e:
        print("RAISED", type(e).__name__, round(time.monotonic() - start, 1), e)
"""


@needs_nccl
@pytest.mark.multi_gpu
def test_dead_peer_raises_within_the_timeout(tmp_path):
    outs = spawn(DEAD_PEER, tmp_path, 0, timeout=90, nranks=2)
    rc, out, err = outs[0]
    assert "RAISED" in out, f"rank 0:\n{out}\n{err[-3000:]}"
    seconds = float(out.split()[2])
    assert seconds < 10 + 30, out  # the timeout plus the abort, not a hang


# ------------------------------------------------------------------ collectives in CUDA graphs

GRAPH_WORKER = """
    import os, sys, numpy as np
    import cukit, cukit.nccl as nccl
    rank, seed = int(os.environ["RANK"]), int(os.environ["SEED"])
    size = int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(open(os.environ["UID_FILE"]).read())
    comm = nccl.Communicator(size, uid, rank, device=rank, timeout=60)
    n = 1000
    s = cukit.Stream(device=rank)
    x = cukit.empty(n, np.float32, device=rank)
    total = cukit.empty(n, np.float32, device=rank)
    gathered = cukit.empty(size * n, np.float32, device=rank)
    part = cukit.empty(n // size, np.float32, device=rank)

    def collectives():
        comm.all_reduce(x, total, stream=s)
        comm.all_gather(x, gathered, stream=s)
        comm.reduce_scatter(x, part, op="max", stream=s)
        comm.all_reduce(x, stream=s, op="sum")  # in place, after the others read x

    x.set(np.ones(n, np.float32))
    collectives()  # once before capture: NCCL connects its peers at the first call
    s.synchronize()
    print("eager", flush=True)
    with s.capture() as g:
        collectives()
    print("captured", flush=True)
    for rep in range(5):  # fresh data each replay: the graph reads the arrays anew
        inputs = [np.random.default_rng([seed, rep, r]).standard_normal(n).astype(np.float32)
                  for r in range(size)]
        x.set(inputs[rank])
        total.set(np.full(n, np.nan, np.float32))
        cukit.synchronize()
        g.launch(s)
        s.synchronize()
        want = np.sum(inputs, axis=0, dtype=np.float32)
        np.testing.assert_allclose(total.get(), want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(gathered.get(), np.concatenate(inputs))
        k = n // size
        np.testing.assert_array_equal(part.get(), np.max(inputs, axis=0)[rank * k:(rank + 1) * k])
        np.testing.assert_allclose(x.get(), want, rtol=1e-5, atol=1e-5)
    print("replayed", flush=True)
    # the graph keeps what it reads: dropping the array leaves the replay valid
    y = cukit.to_device(np.full(64, rank + 1, np.float32), device=rank)
    with s.capture() as g2:
        comm.all_reduce(y, stream=s)
    del y
    g2.launch(s)
    s.synchronize()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:  # another library's capture, on its stream, of cukit's call
        z = cukit.to_device(np.full(64, rank + 1, np.float32), device=rank)
        ts = torch.cuda.Stream(device=rank)
        with torch.cuda.device(rank):
            tg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(tg, stream=ts):
                comm.all_reduce(z, stream=ts.cuda_stream)
            for _ in range(3):
                tg.replay()
        torch.cuda.synchronize(rank)
        print("TORCH", float(z.get()[0]), flush=True)
    # NCCL's destroy waits for every graph holding the communicator's work: destroy()
    # with graphs alive returns at once, and NCCL's runs once the cukit graphs are gone
    # (they keep the communicator); at exit, torch's graph may outlive it, and exit must
    # not hang on it either.
    comm.destroy()
    try:
        comm.all_reduce(x, stream=s)
    except ValueError as e:
        assert "destroyed" in str(e), e
    else:
        raise AssertionError("a destroyed communicator ran a collective")
    g.launch(s)  # the replay still runs: NCCL's communicator is not gone yet
    s.synchronize()
    del g, g2
    print("GRAPHS OK", flush=True)
"""


@needs_nccl
@pytest.mark.multi_gpu
@pytest.mark.timeout(200)
def test_collectives_captured_in_a_graph_replay(tmp_path, rng):
    outs = spawn(GRAPH_WORKER, tmp_path, int(rng.integers(1 << 30)), timeout=150)
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0 and "GRAPHS OK" in out, f"rank {rank}:\n{out}\n{err[-3000:]}"
    torch_sums = {out.split("TORCH")[1].split()[0] for _, out, _ in outs if "TORCH" in out}
    size = len(outs)
    if torch_sums:  # 1..size summed, three times over: sum * size**2 after 3 replays
        assert torch_sums == {repr(float(sum(range(1, size + 1)) * size ** 2))}


# ------------------------------------------------------------------ one-shot all-reduces

ONESHOT_WORKER = """
    import hashlib, os, sys, numpy as np
    import cukit, cukit.nccl as nccl
    rank, seed = int(os.environ["RANK"]), int(os.environ["SEED"])
    size = int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(open(os.environ["UID_FILE"]).read())
    comm = nccl.Communicator(size, uid, rank, device=rank, timeout=60)
    print("ONESHOT", comm.one_shot, flush=True)
    streams = [cukit.Stream(device=rank), cukit.Stream(device=rank), None]

    def inputs(case, dtype, n, op):
        out = []
        for r in range(size):
            g = np.random.default_rng([seed, case, r])
            if np.dtype(dtype).kind == "f":
                out.append(g.standard_normal(n).astype(dtype))
            elif op == "prod":  # small factors: the product stays in range
                out.append(g.integers(1, 4, n).astype(dtype))
            else:
                info = np.iinfo(dtype)
                out.append(g.integers(max(info.min, -1000), min(info.max, 1000), n,
                                      dtype=dtype, endpoint=True))
        return out

    def expect(xs, op, dtype):
        acc = xs[0].copy()
        for x in xs[1:]:  # in rank order, as the one-shot kernel adds
            acc = {"sum": np.add, "avg": np.add, "prod": np.multiply, "max": np.maximum,
                   "min": np.minimum}[op](acc, x)
        return (acc / np.asarray(size, dtype)).astype(dtype) if op == "avg" else acc

    pending, digest, case = [], hashlib.sha256(), 0
    dtypes = [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64, np.int8,
              np.uint8]
    # 16384 float32s are the largest one-shot call (64 KiB); 16385 go to NCCL
    for n in (1, 3, 1000, 16384, 16385):
        for dtype in dtypes:
            ops = ["sum", "prod", "max", "min"] + (["avg"] if np.dtype(dtype).kind == "f" else [])
            for op in ops:
                if n > 1000 and op != "sum" and dtype not in (np.float32, np.int32):
                    continue
                case += 1
                xs = inputs(case, dtype, n, op)
                x = cukit.to_device(xs[rank], device=rank)
                cukit.synchronize()  # x (legacy stream) is in place before the streams read it
                stream = streams[case % 3]
                if case % 2:
                    out = cukit.empty(n, dtype, device=rank)
                    comm.all_reduce(x, out, op=op, stream=stream)
                else:
                    out = x
                    comm.all_reduce(x, op=op, stream=stream)  # in place
                # no wait: calls on alternating streams queue up behind each other
                pending.append((out, xs, op, dtype, n))
    for s in streams:
        comm.synchronize(s)
    for out, xs, op, dtype, n in pending:
        got, want = out.get(), expect(xs, op, dtype)
        if np.dtype(dtype).kind == "f" and (n > 16384 * 4 // np.dtype(dtype).itemsize
                                            or not comm.one_shot):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        elif np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
            digest.update(got.tobytes())  # the same bits on every rank
        else:
            np.testing.assert_array_equal(got, want)
            digest.update(got.tobytes())
    print("CASES", len(pending), "DIGEST", digest.hexdigest(), flush=True)

    # captured: replays read the arrays anew and keep the order of their calls
    s = streams[0]
    x = cukit.empty(777, np.float32, device=rank)
    total = cukit.empty(777, np.float32, device=rank)
    m = cukit.empty(5, np.int64, device=rank)
    with s.capture() as g:
        comm.all_reduce(x, total, stream=s)
        comm.all_reduce(total, op="max", stream=s)  # in place, after the first wrote it
        comm.all_reduce(m, op="min", stream=s)
    for rep in range(6):
        xs = [np.random.default_rng([seed, 99, rep, r]).standard_normal(777).astype(np.float32)
              for r in range(size)]
        ms = [np.random.default_rng([seed, 98, rep, r]).integers(-9, 9, 5) for r in range(size)]
        x.set(xs[rank])
        m.set(ms[rank])
        cukit.synchronize()
        g.launch(s)
        comm.synchronize(s)
        np.testing.assert_allclose(total.get(), expect(xs, "sum", np.float32), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(m.get(), np.min(ms, axis=0))
    # eager calls after the replays, on another stream, still line up with the peers'
    y = cukit.to_device(np.full(10, rank + 1, np.int32), device=rank)
    comm.all_reduce(y, stream=streams[1])
    comm.synchronize(streams[1])
    assert (y.get() == size * (size + 1) // 2).all(), y.get()
    del g
    comm.destroy()
    print("ONESHOT OK", flush=True)
"""


@needs_nccl
@pytest.mark.multi_gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("one_shot", ["on", "off"])
def test_one_shot_all_reduce_two_processes(tmp_path, rng, one_shot):
    """Small all_reduces in cukit's own kernel (peers' memory through CUDA IPC), every
    dtype and op against numpy in rank order, on streams taking turns, in place and not,
    around the 64 KiB edge where NCCL takes over, and captured in a graph; the same with
    CUKIT_NCCL_ONESHOT=0 (NCCL's kernels)."""
    env = {"CUKIT_NCCL_ONESHOT": ""} if one_shot == "on" else {"CUKIT_NCCL_ONESHOT": "0"}
    outs = spawn(ONESHOT_WORKER, tmp_path, int(rng.integers(1 << 30)), env=env, timeout=240)
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0 and "ONESHOT OK" in out, f"rank {rank}:\n{out}\n{err[-3000:]}"
    flags = {out.split("ONESHOT ")[1].split()[0] for _, out, _ in outs}
    assert flags == ({"True"} if one_shot == "on" else {"False"}), flags
    digests = {out.split("DIGEST ")[1].split()[0] for _, out, _ in outs}
    if one_shot == "on":
        assert len(digests) == 1, "the ranks' results differ in their bits"


ONESHOT_MIXED = """
    import gc, os, numpy as np
    import cukit, cukit.nccl as nccl
    rank, seed = int(os.environ["RANK"]), int(os.environ["SEED"])
    size, mode = int(os.environ["WORLD_SIZE"]), os.environ["MODE"]
    uid = bytes.fromhex(open(os.environ["UID_FILE"]).read())
    if mode == "env on one rank" and rank == 0:
        os.environ["CUKIT_NCCL_ONESHOT"] = "0"  # this rank says no; the others must not wait
    if mode == "group on one rank" and rank == 0:
        with nccl.group():  # ready, and set up, only at the group's end
            comm = nccl.Communicator(size, uid, rank, device=rank, timeout=60)
    else:
        comm = nccl.Communicator(size, uid, rank, device=rank, timeout=60)
    print("ONESHOT", comm.one_shot, flush=True)
    case = 0

    def check(c, n=int(np.random.default_rng(seed).integers(1, 3000))):
        global case
        case += 1
        xs = [np.random.default_rng([seed, case, r]).standard_normal(n).astype(np.float32)
              for r in range(size)]
        x = cukit.to_device(xs[rank], device=rank)
        cukit.synchronize()
        c.all_reduce(x)
        c.synchronize()
        np.testing.assert_allclose(x.get(), sum(xs), rtol=1e-5, atol=1e-5)

    check(comm)
    check(comm, n=7)
    if mode == "group on one rank":
        # calls grouped the same way on every rank (NCCL's kernels, launched at the
        # group's end): a small all_reduce beside a large one, then one-shot calls again
        xs = [np.random.default_rng([seed, 77, r]).standard_normal(9).astype(np.float32)
              for r in range(size)]
        ys = [np.random.default_rng([seed, 78, r]).standard_normal(1 << 16).astype(np.float32)
              for r in range(size)]
        x, y = cukit.to_device(xs[rank], device=rank), cukit.to_device(ys[rank], device=rank)
        cukit.synchronize()
        with nccl.group():
            comm.all_reduce(y)
            comm.all_reduce(x)
        comm.synchronize()
        np.testing.assert_allclose(x.get(), sum(xs), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(y.get(), sum(ys), rtol=1e-5, atol=1e-5)
        check(comm)
    if mode == "split and reuse":
        # a communicator's workspace freed and taken again by the next one: its first
        # calls must not read the lines the last one left (numbered as the new ones are)
        for child_round in range(3):
            child = comm.split(0)
            assert child.one_shot == comm.one_shot
            for _ in range(child_round + 2):
                check(child)
            child.destroy()
            del child
            gc.collect()
    if mode == "fresh streams":
        # each call on a new stream, freed at once: a new stream may take a freed one's
        # handle, and must still wait for the last call
        pending = []
        for case in range(30):
            xs = [np.random.default_rng([seed, 500 + case, r]).standard_normal(5000)
                  .astype(np.float32) for r in range(size)]
            pending.append((cukit.to_device(xs[rank], device=rank), xs))
        cukit.synchronize()  # the inputs in place; from here no host wait between calls
        for x, _ in pending:
            s = cukit.Stream(device=rank)
            comm.all_reduce(x, stream=s)
            del s
        cukit.synchronize()
        for x, xs in pending:
            np.testing.assert_allclose(x.get(), sum(xs), rtol=1e-5, atol=1e-5)
    if mode == "graph outlives":
        import torch
        z = cukit.to_device(np.full(64, rank + 1, np.float32), device=rank)
        ts = torch.cuda.Stream(device=rank)
        with torch.cuda.device(rank):
            torch.zeros(1, device=rank)
            tg = torch.cuda.CUDAGraph()
            with torch.cuda.graph(tg, stream=ts):
                comm.all_reduce(z, stream=ts.cuda_stream)
        comm.destroy()  # torch's graph still holds the one-shot kernel and its workspace
        del comm
        gc.collect()
        assert cukit._cukit._nccl_oneshot_orphans() == 1
        z.set(np.full(64, rank + 1, np.float32))
        cukit.synchronize()
        with torch.cuda.device(rank):
            tg.replay()
        torch.cuda.synchronize(rank)
        assert (z.get() == size * (size + 1) // 2).all(), z.get()
        del tg
        gc.collect()
        torch.cuda.synchronize(rank)
        import time
        for _ in range(200):  # the driver's thread lets go of the workspace
            if cukit._cukit._nccl_oneshot_orphans() == 0:
                break
            time.sleep(0.01)
        print("ORPHANS", cukit._cukit._nccl_oneshot_orphans(), flush=True)
    else:
        comm.destroy()
    print("MIXED OK", flush=True)
"""


@needs_nccl
@pytest.mark.multi_gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["group on one rank", "env on one rank", "split and reuse",
                                  "fresh streams", "graph outlives"])
def test_one_shot_all_reduce_ranks_that_differ(tmp_path, rng, mode):
    """Ranks that make their communicator in a group or not, or turn the one-shot kernel
    off alone, agree (no rank waits for ever); calls grouped on every rank keep the
    group's order; a communicator
    made where the last one's workspace was freed reads none of its lines; calls on
    streams made and freed in turn run one after the other; a graph of another library
    keeps the workspace of a communicator destroyed before it."""
    if mode == "graph outlives":
        pytest.importorskip("torch")
    env = {"MODE": mode, "CUKIT_NCCL_ONESHOT": ""}
    outs = spawn(ONESHOT_MIXED, tmp_path, int(rng.integers(1 << 30)), env=env, timeout=240)
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0 and "MIXED OK" in out, f"rank {rank}:\n{out}\n{err[-3000:]}"
    flags = {out.split("ONESHOT ")[1].split()[0] for _, out, _ in outs}
    assert flags == ({"False"} if mode == "env on one rank" else {"True"}), flags
    if mode == "graph outlives":
        assert {out.split("ORPHANS ")[1].split()[0] for _, out, _ in outs} == {"0"}


ONESHOT_WORDS = 16384  # 4-byte words of data a slot holds (64 KiB)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype, op", [(np.float32, "sum"), (np.int64, "max"),
                                       (np.uint8, "prod"), (np.float64, "avg")])
def test_one_shot_kernel_against_a_peer_that_already_sent(dtype, op, rng):
    """The one-shot kernel on one device, as rank 0 of 2 whose peer's lines (its data,
    each word with the call's number) are already in this rank's workspace: it sends its
    own lines to the peer's workspace, bumps its call counter and reduces in rank order.
    Runs wherever a kernel runs (the emulator included), unlike the two-GPU tests."""
    ops = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
    types = {np.float32: 7, np.int64: 4, np.uint8: 1, np.float64: 8}
    kernel = cukit.compile(cukit._cukit._nccl_oneshot_source()).get_kernel(
        f"ck_os_{types[dtype]}_{ops[op]}")
    n = int(rng.integers(1, 3000))
    if np.dtype(dtype).kind == "f":
        mine, theirs = (rng.standard_normal(n).astype(dtype) for _ in range(2))
    else:
        mine, theirs = (rng.integers(1, 5, n).astype(dtype) for _ in range(2))
    nbytes = 4096 + 2 * 2 * ONESHOT_WORDS * 8
    ws = [cukit.zeros(nbytes, np.uint8) for _ in range(2)]
    # the peer (rank 1) sent call 1 (the odd set) into this rank's slot 1: a line per
    # 4 bytes of its data (zero-padded), the call's number in the high half
    words = np.zeros(-(-theirs.nbytes // 4) * 4, np.uint8)
    words[:theirs.nbytes] = theirs.view(np.uint8)
    lines = (np.uint64(1) << np.uint64(32)) | words.view(np.uint32).astype(np.uint64)
    at = 4096 + 1 * 2 * ONESHOT_WORDS * 8 + 1 * ONESHOT_WORDS * 8
    host = np.zeros(nbytes, np.uint8)
    host[at:at + lines.nbytes] = lines.view(np.uint8)
    ws[0].set(host)
    x, out = cukit.to_device(mine), cukit.empty(n, dtype)
    stop = cukit.zeros(1, np.int32)
    peers = np.zeros(8, np.uint64)
    peers[:2] = ws[0].ptr, ws[1].ptr
    kernel(x, out, np.uint64(n), peers.tobytes(), np.int32(0), np.int32(2), stop, grid=1,
           block=512)
    cukit.synchronize()
    fn = {"sum": np.add, "avg": np.add, "prod": np.multiply, "max": np.maximum}[op]
    want = fn(mine, theirs)
    if op == "avg":
        want = (want / dtype(2)).astype(dtype)
    np.testing.assert_array_equal(out.get(), want)
    assert ws[0].get()[:8].view(np.uint64)[0] == 1  # the call counter
    sent = ws[1].get()[at - ONESHOT_WORDS * 8:][:lines.nbytes].view(np.uint64)
    assert (sent >> np.uint64(32) == 1).all()
    got = (sent & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.uint8)[:mine.nbytes]
    np.testing.assert_array_equal(got.view(dtype), mine)


ONESHOT_THREADS = """
    import os, threading, numpy as np
    import cukit, cukit.nccl as nccl
    size = cukit.device_count()
    uid = nccl.get_unique_id()
    comms, results = [None] * size, [None] * size

    def rank_main(r):
        comms[r] = c = nccl.Communicator(size, uid, r, device=r, timeout=60)
        x = cukit.to_device(np.arange(100, dtype=np.float64) * (r + 1), device=r)
        s = cukit.Stream(device=r)
        for _ in range(3):
            c.all_reduce(x, stream=s)
        c.synchronize(s)
        results[r] = x.get()

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    k = size * (size + 1) // 2
    want = np.arange(100, dtype=np.float64) * k * size ** 2
    for r in range(size):
        np.testing.assert_array_equal(results[r], want)
    print("FLAGS", [c.one_shot for c in comms])
    for c in comms:
        c.destroy()
    print("THREADS OK")
"""


@needs_nccl
@pytest.mark.multi_gpu
@pytest.mark.timeout(200)
def test_one_shot_all_reduce_ranks_of_one_process():
    """Ranks made in threads of one process reach each other's workspace through peer
    access (CUDA IPC refuses a process's own memory)."""
    out = run_python(ONESHOT_THREADS, env={"CUKIT_NCCL_ONESHOT": ""}, timeout=150)
    assert "THREADS OK" in out.stdout, out.stdout + out.stderr[-3000:]
    assert "FLAGS [" + ", ".join(["True"] * cukit.device_count()) + "]" in out.stdout, out.stdout


DEAD_PEER_ONESHOT = DEAD_PEER.replace("np.ones(1 << 20, np.float32)", "np.ones(16, np.float32)")


@needs_nccl
@pytest.mark.multi_gpu
@pytest.mark.timeout(200)
def test_dead_peer_of_a_one_shot_all_reduce_raises_within_the_timeout(tmp_path):
    """The one-shot kernel waits for the peer's flag; the timeout aborts the communicator,
    which makes the kernel return, instead of a GPU spinning for ever."""
    outs = spawn(DEAD_PEER_ONESHOT, tmp_path, 0, timeout=90, nranks=2,
                 env={"CUKIT_NCCL_ONESHOT": ""})
    rc, out, err = outs[0]
    assert "RAISED" in out, f"rank 0:\n{out}\n{err[-3000:]}"
    assert float(out.split()[2]) < 10 + 30, out


@needs_nccl
def test_the_emulator_refuses_communicators_with_a_clear_error():
    """NCCL's own CUDA calls cannot run on the emulator: say so before calling NCCL."""
    if cukit.device_count() == 0 or cukit.backend() != "emulator":
        pytest.skip("not the emulator backend")
    with pytest.raises(cukit.NotSupportedError, match="NCCL runs on NVIDIA GPUs only"):
        nccl.Communicator(1, nccl.get_unique_id(), 0)
    with pytest.raises(cukit.NotSupportedError, match="init_all: NCCL runs on NVIDIA GPUs"):
        nccl.init_all([0])


# ------------------------------------------------------------------ symmetric memory (NCCL 2.27+)

HAVE_WINDOWS = NCCL_VERSION is not None and NCCL_VERSION >= (2, 27, 0)
needs_windows = pytest.mark.skipif(not HAVE_WINDOWS,
                                   reason=f"needs NCCL 2.27 or newer, have {NCCL_VERSION}")

# The NCCL entry points cukit requires (csrc/nccl/nccl.h's REQUIRED ones), for a stub
# library that is an NCCL too old for windows.
STUB_NCCL = r"""
typedef struct { char internal[128]; } id_t;
int ncclGetVersion(int *v) { *v = 22000; return 0; }
const char *ncclGetErrorString(int r) { (void)r; return "stub"; }
const char *ncclGetLastError(void *c) { (void)c; return ""; }
int ncclGetUniqueId(id_t *id) { (void)id; return 0; }
#define STUB(name) int name(void) { return 3; }
STUB(ncclCommInitRank) STUB(ncclCommInitAll) STUB(ncclCommDestroy) STUB(ncclCommAbort)
STUB(ncclCommGetAsyncError) STUB(ncclCommCount) STUB(ncclCommCuDevice) STUB(ncclCommUserRank)
STUB(ncclAllReduce) STUB(ncclBroadcast) STUB(ncclReduce) STUB(ncclAllGather)
STUB(ncclReduceScatter) STUB(ncclSend) STUB(ncclRecv) STUB(ncclGroupStart) STUB(ncclGroupEnd)
"""


def test_symmetric_memory_on_an_old_nccl_names_the_version_needed(tmp_path):
    """An NCCL without ncclCommWindowRegister still loads; symmetric memory says 2.27."""
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stub libnccl")
    (tmp_path / "stub.c").write_text(STUB_NCCL)
    lib = tmp_path / "libnccl.so.2"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "stub.c")],
                   check=True, capture_output=True)
    out = run_python("""
        import cukit, cukit.nccl as nccl
        print("VERSION", nccl.version())
        try:
            nccl.symmetric_empty([], 4)
        except cukit.NotSupportedError as e:
            print("RAISED", e)
    """, env={"CUKIT_NCCL": str(lib)})
    assert "VERSION (2, 20, 0)" in out.stdout, out.stdout + out.stderr
    assert "RAISED" in out.stdout and "needs NCCL 2.27 or newer" in out.stdout, out.stdout
    assert "NCCL 2.20.0" in out.stdout and "pip install -U nvidia-nccl-cu13" in out.stdout


@needs_windows
def test_symmetric_empty_checks_its_communicators():
    with pytest.raises(ValueError, match="give at least one communicator"):
        nccl.symmetric_empty([], 4)
    with pytest.raises(TypeError, match=r"comms\[0\] is int, not a cukit.nccl.Communicator"):
        nccl.symmetric_empty([1], 4)
    with pytest.raises(TypeError, match="shape must be an int or a sequence of ints"):
        nccl.symmetric_empty([], None)
    with pytest.raises(ValueError, match="negative dimension -2"):
        nccl.symmetric_empty([], (3, -2))
    with pytest.raises(ValueError, match="needs at least one element"):
        nccl.symmetric_empty([], (3, 0), np.float32)
    with pytest.raises(ValueError, match="overflows"):
        nccl.symmetric_empty([], (1 << 40, 1 << 40))
    with pytest.raises(TypeError):
        nccl.symmetric_empty([], 4, "not a dtype")
    with pytest.raises(ValueError, match="give at least one communicator"):
        nccl.symmetric_empty([], np.int64(4), np.float32)
    assert nccl.window_of(np.zeros(3)) is None
    if HAVE_GPU:
        assert nccl.window_of(cukit.empty(3)) is None


@needs_windows
@pytest.mark.gpu
@pytest.mark.gpu_hardware  # NCCL needs real devices
def test_symmetric_single_rank(rng):
    with nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=60) as comm:
        x = comm.symmetric_empty((10, 100), np.float32)
        assert (x.shape, x.dtype, x.device) == ((10, 100), np.float32, comm.device)
        w = nccl.window_of(x)
        assert isinstance(w, nccl.Window) and w.communicator is comm
        assert w.nbytes == 4096 and w.ptr == x.ptr
        assert comm.symmetric_empty(3).dtype == np.float64  # as cukit.empty
        data = rng.standard_normal((10, 100)).astype(np.float32)
        x.set(data)
        out = comm.symmetric_empty((10, 100), np.float32)
        out.set(np.full((10, 100), np.nan, np.float32))
        comm.all_reduce(x, out, op="sum")
        comm.synchronize()
        np.testing.assert_array_equal(out.get(), data)
        with pytest.raises(ValueError, match="needs at least one element"):
            comm.symmetric_empty(0)
        with pytest.raises(ValueError, match="negative dimension"):
            comm.symmetric_empty((2, -1))
        with pytest.raises(TypeError, match="shape must be an int or a sequence"):
            comm.symmetric_empty(None)
        with nccl.group():
            with pytest.raises(RuntimeError, match="inside cukit.nccl.group"):
                comm.symmetric_empty(4)
        s = cukit.Stream()
        with s.capture():
            with pytest.raises(RuntimeError, match="allocate symmetric arrays before capturing"):
                comm.symmetric_empty(4)
        x.free()  # lets go of the window: deregistered and freed now
        assert nccl.window_of(x) is None
    # destroy() deregistered out's window; the memory stays readable until out goes
    np.testing.assert_array_equal(out.get(), data)
    with pytest.raises(ValueError, match="the communicator was destroyed"):
        comm.symmetric_empty(4)


@needs_windows
@pytest.mark.gpu
@pytest.mark.gpu_hardware  # NCCL needs real devices
def test_symmetric_window_dropped_inside_a_capture(rng):
    """Windows whose last user goes while a capture is going on (a graph holding them,
    a symmetric array) cannot be released then: waiting for the queued work would break
    the capture. They wait, alive, for the next collective or synchronize outside it."""
    n = 1000
    with nccl.Communicator(1, nccl.get_unique_id(), 0, timeout=60) as comm:
        s = cukit.Stream()
        x = comm.symmetric_empty(n, np.float32)
        y = comm.symmetric_empty(n, np.float32)
        assert nccl.pending_windows() == 0  # any left by earlier work went at that safe point
        data = rng.standard_normal(n).astype(np.float32)
        x.set(data)
        y.set(np.full(n, np.nan, np.float32))
        with s.capture() as g:
            comm.all_reduce(x, y, stream=s)
        del x  # g keeps x's window
        g.launch(s)
        comm.synchronize(s)
        np.testing.assert_array_equal(y.get(), data)
        a = comm.symmetric_empty(n, np.float32)
        b = comm.symmetric_empty(n, np.float32)
        z = comm.symmetric_empty(4, np.float32)
        data2 = rng.standard_normal(n).astype(np.float32)
        a.set(data2)
        b.set(np.full(n, np.nan, np.float32))
        cukit.synchronize()
        with s.capture() as g2:
            del g  # x's window: its last user goes inside this capture
            del z
            assert nccl.pending_windows() == 2
            comm.all_reduce(a, b, stream=s)  # no safe point while capturing
            assert nccl.pending_windows() == 2
        assert nccl.pending_windows() == 2
        g2.launch(s)
        comm.synchronize(s)  # the safe point: both released, after the queued work
        assert nccl.pending_windows() == 0
        np.testing.assert_array_equal(b.get(), data2)
        np.testing.assert_array_equal(y.get(), data)
        assert nccl.window_of(y).communicator is comm
        del g2


def _sym_inputs(seed, size, shape, dtype):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [rng.standard_normal(shape).astype(dtype) for _ in range(size)]
    return [rng.integers(-1000, 1000, shape).astype(dtype) for _ in range(size)]


def _poison(dtype):
    return np.nan if np.dtype(dtype).kind == "f" else -7


@needs_windows
@pytest.mark.multi_gpu
@pytest.mark.parametrize("dtype, n", [("float32", 1000), ("float16", 1000), ("int32", 1000),
                                      ("float32", 1 << 20)])
def test_symmetric_collectives_init_all(comms, dtype, n, rng):
    """all_reduce, all_gather, reduce_scatter on symmetric arrays against numpy, eager
    and captured in graphs (one per GPU) replayed with fresh data. int32 has no symmetric
    kernel: NCCL's usual one must still answer right on such memory. 4 MiB takes NCCL's
    load/store symmetric kernels, which it also runs with one process for all GPUs."""
    import contextlib

    size = len(comms)
    tol = {"float16": 1e-2}.get(dtype, 1e-5)
    with pytest.raises(RuntimeError, match="one of %d that init_all made" % size):
        comms[0].symmetric_empty(n, dtype)
    with pytest.raises(ValueError, match="registering is collective, pass them all"):
        nccl.symmetric_empty(comms[:1], n, dtype)
    send = nccl.symmetric_empty(comms, n, dtype)
    total = nccl.symmetric_empty(comms, n, dtype)
    gathered = nccl.symmetric_empty(comms, size * n, dtype)
    big = nccl.symmetric_empty(comms, size * n, dtype)
    part = nccl.symmetric_empty(comms, n, dtype)
    for i, c in enumerate(comms):
        w = nccl.window_of(send[i])
        assert w.communicator is c and send[i].device == c.device and w.nbytes >= n * 2
    streams = [cukit.Stream(device=c.device) for c in comms]

    def run():
        for op in ("all_reduce", "all_gather", "reduce_scatter"):
            with nccl.group():
                for i, c in enumerate(comms):
                    if op == "all_reduce":
                        c.all_reduce(send[i], total[i], stream=streams[i])
                    elif op == "all_gather":
                        c.all_gather(send[i], gathered[i], stream=streams[i])
                    else:
                        c.reduce_scatter(big[i], part[i], stream=streams[i])

    def check(launch):
        seed = int(rng.integers(1 << 30))
        ins = _sym_inputs([seed, 0], size, n, dtype)
        bigs = _sym_inputs([seed, 1], size, size * n, dtype)
        for i in range(size):
            send[i].set(ins[i])
            big[i].set(bigs[i])
            total[i].set(np.full(n, _poison(dtype), dtype))
            gathered[i].set(np.full(size * n, _poison(dtype), dtype))
            part[i].set(np.full(n, _poison(dtype), dtype))
        cukit.synchronize()
        launch()
        for c, s in zip(comms, streams):
            c.synchronize(s)
        want = np.sum(np.array(ins, np.float64), axis=0)
        want_rs = np.sum(np.array(bigs, np.float64), axis=0)
        for i in range(size):
            np.testing.assert_allclose(total[i].get().astype(np.float64), want, rtol=tol,
                                       atol=tol)
            np.testing.assert_array_equal(gathered[i].get(), np.concatenate(ins))
            np.testing.assert_allclose(part[i].get().astype(np.float64),
                                       want_rs[i * n:(i + 1) * n], rtol=tol, atol=tol)

    check(run)  # eager (also connects the ranks before the capture)
    with contextlib.ExitStack() as stack:
        graphs = [stack.enter_context(s.capture()) for s in streams]
        run()
    for _ in range(3):
        check(lambda: [g.launch(s) for g, s in zip(graphs, streams)])
    graphs.clear()


SYM_WORKER = """
    import os, sys, numpy as np
    import cukit, cukit.nccl as nccl
    rank, seed = int(os.environ["RANK"]), int(os.environ["SEED"])
    size = int(os.environ["WORLD_SIZE"])
    uid = bytes.fromhex(open(os.environ["UID_FILE"]).read())
    comm = nccl.Communicator(size, uid, rank, device=rank, timeout=60)
    s = cukit.Stream(device=rank)
    n = 1000

    def inputs(key, shape, dtype):
        return [np.random.default_rng([seed, key, r]).standard_normal(shape).astype(dtype)
                for r in range(size)]

    for dtype, tol in (("float32", 1e-5), ("float16", 1e-2)):
        x = comm.symmetric_empty(n, dtype)
        total = comm.symmetric_empty(n, dtype)
        gathered = comm.symmetric_empty(size * n, dtype)
        big = comm.symmetric_empty(size * n, dtype)
        part = comm.symmetric_empty(n, dtype)
        print(dtype, "registered", nccl.window_of(x).registered, flush=True)

        def collectives():
            comm.all_reduce(x, total, stream=s)
            comm.all_gather(x, gathered, stream=s)
            comm.reduce_scatter(big, part, stream=s)

        def check(key, launch):
            ins, bigs = inputs(key, n, dtype), inputs(key + 1, size * n, dtype)
            x.set(ins[rank])
            big.set(bigs[rank])
            for out in (total, gathered, part):
                out.set(np.full(out.shape, np.nan, dtype))
            cukit.synchronize()
            launch()
            comm.synchronize(s)
            want = np.sum(np.array(ins, np.float64), axis=0)
            np.testing.assert_allclose(total.get().astype(np.float64), want, rtol=tol, atol=tol)
            np.testing.assert_array_equal(gathered.get(), np.concatenate(ins))
            want = np.sum(np.array(bigs, np.float64), axis=0)[rank * n:(rank + 1) * n]
            np.testing.assert_allclose(part.get().astype(np.float64), want, rtol=tol, atol=tol)

        check(0, collectives)  # eager
        with s.capture() as g:
            collectives()
        for rep in range(3):  # fresh data each replay: the graph reads the arrays anew
            check(10 + 2 * rep, lambda: g.launch(s))
        # the first round's graph went inside this round's capture: its windows waited
        # for the next synchronize outside it
        assert nccl.pending_windows() == 0, nccl.pending_windows()
        print(dtype, "ok", flush=True)

    # a graph keeps the window of a symmetric array whose free() let go of it
    y = comm.symmetric_empty(64, np.float32)
    y.set(np.full(64, rank + 1, np.float32))
    comm.all_reduce(y, stream=s)
    with s.capture() as g2:
        comm.all_reduce(y, stream=s)
    y.free()
    assert nccl.window_of(y) is None
    for _ in range(3):
        g2.launch(s)
    s.synchronize()  # an unmapped window would fault here
    comm.destroy()  # graphs alive: the windows deregister as they go
    np.testing.assert_allclose(total.get().astype(np.float64), total.get())  # still readable
    del g, g2
    print("SYMMETRIC OK", flush=True)
"""


@needs_windows
@pytest.mark.multi_gpu
@pytest.mark.timeout(200)
def test_symmetric_collectives_two_processes(tmp_path, rng):
    """One process per GPU: the case where NCCL runs its symmetric kernels (in one
    process driving several GPUs it keeps its usual LL kernels unless
    NCCL_SINGLE_PROC_MEM_REG_ENABLE=1)."""
    outs = spawn(SYM_WORKER, tmp_path, int(rng.integers(1 << 30)), timeout=150)
    for rank, (rc, out, err) in enumerate(outs):
        assert rc == 0 and "SYMMETRIC OK" in out, f"rank {rank}:\n{out}\n{err[-3000:]}"
