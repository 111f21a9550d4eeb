"""cukit.nccl: NCCL collectives on any CUDA array (cukit, torch, CuPy, JAX, numba).

One process per GPU, launched by mpirun or torchrun:

    import cukit, cukit.nccl as nccl
    comm = nccl.from_env()            # torchrun; nccl.from_mpi() under mpirun
    x = cukit.to_device(data, device=comm.device)
    comm.all_reduce(x)                # in place, sum
    comm.synchronize()                # raises instead of hanging when a peer dies (timeout=)

libnccl is loaded at first use (`pip install nvidia-nccl-cu13`, or `pip install '.[nccl]'` in cukit's checkout).
The work itself is in C (cukit._cukit); this module only re-exports it and adds
the two bootstraps, which exchange the unique id through the launcher.
"""
import contextlib
import datetime
import os

from . import _cukit
from ._cukit import Communicator, NcclError, NcclTimeoutError, Window

__all__ = [
    "Communicator",
    "NcclError",
    "NcclTimeoutError",
    "Window",
    "from_env",
    "from_mpi",
    "get_unique_id",
    "group",
    "init_all",
    "library",
    "pending_windows",
    "symmetric_empty",
    "version",
    "window_of",
]


def version():
    """(major, minor, patch) of the libnccl cukit uses; loads it (NotSupportedError without)."""
    return _cukit.nccl_version()


def library():
    """Where libnccl was loaded from."""
    return _cukit.nccl_library()


def get_unique_id():
    """A new NCCL unique id (128 bytes, picklable): made by one rank, sent to the others."""
    return _cukit.nccl_get_unique_id()


def init_all(devices, timeout=None):
    """One communicator per GPU of this process (ncclCommInitAll); see Communicator.init_all."""
    return Communicator.init_all(devices, timeout=timeout)


def symmetric_empty(comms, shape, dtype=float):
    """One symmetric array per communicator of this process (init_all's), registered in
    one NCCL group: the one-process form of Communicator.symmetric_empty.

    A single Communicator (one process per GPU) is also taken: its array alone."""
    if isinstance(comms, Communicator):
        return comms.symmetric_empty(shape, dtype)
    return _cukit.nccl_symmetric_empty_all(comms, shape, dtype)


def window_of(array):
    """The cukit.nccl.Window under a symmetric array (None for any other array)."""
    return _cukit.nccl_window_of(array)


def pending_windows():
    """How many symmetric memory windows wait for release: those whose last user went
    while a stream capture was going on are deregistered and freed at the next
    collective, synchronize(), destroy() or symmetric_empty after it."""
    return _cukit.nccl_pending_windows()


@contextlib.contextmanager
def group():
    """ncclGroupStart() ... ncclGroupEnd(): the operations inside launch together.

    Needed when one thread drives several GPUs (init_all) and for send/recv pairs.
    Calls inside a group are NCCL's (a small all_reduce outside one may be cukit's
    one-shot kernel), so group a call the same way on every rank. Communicators made
    inside a group are ready, and set up, when it ends."""
    _cukit.nccl_group_start()
    try:
        yield
    finally:
        _cukit.nccl_group_end()


def _default_device(local_rank):
    n = _cukit.device_count()
    if n == 0:
        raise _cukit.NoDeviceError("cukit.nccl: this process sees no GPU")
    return local_rank % n


def from_mpi(comm=None, device=None, timeout=None):
    """A Communicator over an mpi4py communicator (default: MPI.COMM_WORLD).

    Rank 0 makes the unique id and MPI broadcasts it. The GPU defaults to the
    rank's index among the ranks on its host, modulo the GPUs it sees."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise ImportError("cukit.nccl.from_mpi needs mpi4py: pip install mpi4py") from e
    comm = MPI.COMM_WORLD if comm is None else comm
    uid = get_unique_id() if comm.Get_rank() == 0 else None
    uid = comm.bcast(uid, root=0)
    if device is None:
        local = comm.Split_type(MPI.COMM_TYPE_SHARED)
        device = _default_device(local.Get_rank())
        local.Free()
    return Communicator(comm.Get_size(), uid, comm.Get_rank(), device=device, timeout=timeout)


def _env_int(name, default=None):
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise RuntimeError(f"cukit.nccl.from_env: {name} is not set; launch with torchrun "
                               "(or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)")
        return default
    return int(value)


def from_env(device=None, timeout=None, store_timeout=300.0):
    """A Communicator from torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK,
    MASTER_ADDR, MASTER_PORT. Rank 0 puts the unique id in torch's TCPStore and the
    others read it (torch must be installed unless WORLD_SIZE is 1)."""
    rank = _env_int("RANK", 0 if "WORLD_SIZE" not in os.environ else None)
    size = _env_int("WORLD_SIZE", 1)
    local = _env_int("LOCAL_RANK", rank)
    if device is None:
        device = _default_device(local)
    if size == 1:
        return Communicator(1, get_unique_id(), 0, device=device, timeout=timeout)
    try:
        from torch.distributed import TCPStore
    except ImportError as e:
        raise ImportError("cukit.nccl.from_env exchanges the unique id through torch's TCPStore: "
                          "pip install torch, or launch with mpirun and use from_mpi") from e
    host = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = _env_int("MASTER_PORT")
    # torchrun's agent already serves a store on MASTER_PORT: every worker is a client.
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    store = TCPStore(host, port, size, is_master=(rank == 0 and not agent),
                     timeout=datetime.timedelta(seconds=store_timeout))
    key = "cukit/nccl/unique_id/{}/{}".format(os.environ.get("TORCHELASTIC_RUN_ID", "0"),
                                             os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if rank == 0:
        store.set(key, get_unique_id())
    uid = bytes(store.get(key))
    return Communicator(size, uid, rank, device=device, timeout=timeout)
