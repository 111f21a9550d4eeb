"""Every collective checked against numpy, for the ranks one process drives.

Shared by tests/test_nccl.py (one process driving both GPUs through init_all) and
the worker processes it spawns (one GPU each). Every rank's input comes from
(seed, rank), so each process computes the expected result of all ranks itself.
"""
import numpy as np

import cukit
import cukit.nccl as nccl

N = 3 * 512  # elements per rank: divisible by the rank counts used (1, 2, 3, 4)

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    BF16 = None

DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "bfloat16"]
TOL = {"float16": 1e-2, "bfloat16": 3e-2, "float32": 1e-5, "float64": 1e-12}
REDUCE = {
    "sum": lambda s: s.sum(axis=0),
    "prod": lambda s: s.prod(axis=0),
    "min": lambda s: s.min(axis=0),
    "max": lambda s: s.max(axis=0),
    "avg": lambda s: s.mean(axis=0),
}


def np_dtype(name):
    """The host dtype of a case; bfloat16 is held as float32 where ml_dtypes is missing."""
    if name == "bfloat16":
        return BF16 if BF16 is not None else np.dtype(np.float32)
    return np.dtype(name)


def host_data(seed, rank, n, dtype):
    """Rank `rank`'s input: floats near 1 (products stay tame), small integers."""
    rng = np.random.default_rng([seed, rank])
    if dtype.kind in "iu":
        lo = 0 if dtype.kind == "u" else -3
        return rng.integers(lo, 4, n).astype(dtype)
    return rng.uniform(0.5, 1.5, n).astype(dtype)


class CukitArrays:
    name = "cukit"
    bfloat16 = BF16 is not None  # cukit takes numpy's bfloat16 from ml_dtypes

    def put(self, host, device, dtype_name):
        return cukit.to_device(host, device=device)

    def poison(self, n, dtype, device, dtype_name):
        a = cukit.empty(n, dtype, device=device)
        a.set(np.full(n, 0x7F if dtype.kind in "iu" else np.nan, dtype))
        return a

    def get(self, a):
        return a.get()


class TorchTensors:
    name = "torch"
    bfloat16 = True

    def __init__(self):
        import torch

        self.torch = torch

    def put(self, host, device, dtype_name):
        if dtype_name == "bfloat16":
            return self.torch.from_numpy(host.astype(np.float32)).to(
                f"cuda:{int(device)}").to(self.torch.bfloat16)
        return self.torch.from_numpy(host).to(f"cuda:{int(device)}")

    def poison(self, n, dtype, device, dtype_name):
        return self.put(np.full(n, 0x7F if dtype.kind in "iu" else np.nan, dtype), device,
                        dtype_name)

    def get(self, t):
        if t.dtype == self.torch.bfloat16:
            return t.float().cpu().numpy()
        return t.cpu().numpy()


def close(got, want, dtype_name, what):
    got = np.asarray(got)
    if dtype_name in TOL:
        g, w = got.astype(np.float64), np.asarray(want).astype(np.float64)
        assert not np.isnan(g).any(), f"{what}: unwritten (NaN) elements"
        np.testing.assert_allclose(g, w, rtol=TOL[dtype_name], atol=TOL[dtype_name], err_msg=what)
    else:
        np.testing.assert_array_equal(got, np.asarray(want).astype(got.dtype), err_msg=what)


def launch(comms, fn):
    """fn(comm) on every local rank inside one group, then wait for each."""
    with nccl.group():
        for c in comms:
            fn(c)
    for c in comms:
        c.synchronize()


def cases(bfloat16=True):
    """(collective, op, dtype, in_place) for every combination that NCCL defines."""
    out = []
    for dt in DTYPES if bfloat16 else [d for d in DTYPES if d != "bfloat16"]:
        floating = dt not in ("int32", "int64", "uint8")
        for op in ("sum", "prod", "min", "max") + (("avg",) if floating else ()):
            for ip in (False, True):
                out.append(("all_reduce", op, dt, ip))
        for ip in (False, True):
            out.append(("broadcast", None, dt, ip))
            out.append(("reduce", "sum", dt, ip))
            out.append(("all_gather", None, dt, ip))
            out.append(("reduce_scatter", "max" if dt == "uint8" else "sum", dt, ip))
        out.append(("all_to_all", None, dt, False))
        out.append(("send_recv", None, dt, False))
    return out


def run_case(comms, nranks, seed, backend, collective, op, dtype_name, in_place):
    """One case on the local ranks `comms` of an nranks communicator."""
    dt = np_dtype(dtype_name)
    data = [host_data(seed, r, N, dt) for r in range(nranks)]
    stack = np.stack([d.astype(np.float64) if dtype_name in TOL else d.astype(np.int64)
                      for d in data])
    part = N // nranks
    send = {c.rank: backend.put(data[c.rank], c.device, dtype_name) for c in comms}

    def poison(n, device):
        return backend.poison(n, dt, device, dtype_name)

    what = f"{backend.name} {collective} {op} {dtype_name} in_place={in_place}"

    if collective in ("all_reduce", "reduce", "broadcast"):
        recv = {c.rank: None if in_place else poison(N, c.device) for c in comms}
        if collective == "all_reduce":
            launch(comms, lambda c: c.all_reduce(send[c.rank], recv[c.rank], op=op))
        elif collective == "reduce":
            launch(comms, lambda c: c.reduce(send[c.rank], recv[c.rank], op=op, root=nranks - 1))
        else:
            launch(comms, lambda c: c.broadcast(send[c.rank], recv[c.rank], root=nranks - 1))
        want = data[nranks - 1] if collective == "broadcast" else REDUCE[op](stack)
        for c in comms:
            if collective == "reduce" and c.rank != nranks - 1:
                continue
            close(backend.get(send[c.rank] if in_place else recv[c.rank]), want, dtype_name, what)
    elif collective == "all_gather":
        if in_place:
            full = {c.rank: poison(N * nranks, c.device) for c in comms}
            for c in comms:  # this rank's part of recv holds its input
                full[c.rank][c.rank * N:(c.rank + 1) * N] = send[c.rank]
            launch(comms, lambda c: c.all_gather(None, full[c.rank]))
        else:
            full = {c.rank: poison(N * nranks, c.device) for c in comms}
            launch(comms, lambda c: c.all_gather(send[c.rank], full[c.rank]))
        for c in comms:
            close(backend.get(full[c.rank]), np.concatenate(data), dtype_name, what)
    elif collective == "reduce_scatter":
        want = REDUCE[op](stack)
        if in_place:
            launch(comms, lambda c: c.reduce_scatter(send[c.rank], None, op=op))
            for c in comms:
                got = backend.get(send[c.rank])[c.rank * part:(c.rank + 1) * part]
                close(got, want[c.rank * part:(c.rank + 1) * part], dtype_name, what)
        else:
            recv = {c.rank: poison(part, c.device) for c in comms}
            launch(comms, lambda c: c.reduce_scatter(send[c.rank], recv[c.rank], op=op))
            for c in comms:
                close(backend.get(recv[c.rank]), want[c.rank * part:(c.rank + 1) * part],
                      dtype_name, what)
    elif collective == "all_to_all":
        recv = {c.rank: poison(N, c.device) for c in comms}
        launch(comms, lambda c: c.all_to_all(send[c.rank], recv[c.rank]))
        for c in comms:
            want = np.concatenate([data[i][c.rank * part:(c.rank + 1) * part]
                                   for i in range(nranks)])
            close(backend.get(recv[c.rank]), want, dtype_name, what)
    elif collective == "send_recv":
        # A ring: rank r sends to r + 1 and receives from r - 1.
        recv = {c.rank: poison(N, c.device) for c in comms}

        def ring(c):
            c.send(send[c.rank], (c.rank + 1) % nranks)
            c.recv(recv[c.rank], (c.rank - 1) % nranks)

        launch(comms, ring)
        for c in comms:
            close(backend.get(recv[c.rank]), data[(c.rank - 1) % nranks], dtype_name, what)
    else:
        raise ValueError(collective)


def run_all(comms, nranks, seed, backend):
    """Every case; returns how many ran."""
    count = 0
    for case in cases(backend.bfloat16):
        run_case(comms, nranks, seed, backend, *case)
        count += 1
    return count
