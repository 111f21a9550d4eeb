"""cukit.debug: reproducers that replay anywhere.

    with cukit.debug.capture("repro"):      # or CUKIT_CAPTURE=repro for a whole program
        run_my_program()
    # a KernelFaultError / CudaError after a launch now names a folder, e.g. repro/fault-1,
    # and the command that replays it:  python -m cukit replay repro/fault-1
    cukit.debug.replay("repro/fault-1")   # on the emulator: the faulting thread and line
    cukit.debug.save_launch(kernel, x, y, n, grid=4, block=256, path="bug")  # one launch

The launch path's hook is C (launch/capture.c): with no capture on it costs one branch.
While a capture is on, every launch of a cukit.Kernel or PreparedLaunch calls the
recorder below, which waits for the work before it and keeps the bytes of each buffer
argument, and after the launch waits for it and keeps the bytes again. The folder format (FORMAT, below, and the
guide's "Debugging kernels" page) is read and written here: it is not a hot path.
"""
import errno
import hashlib
import json
import os
import re
import stat
import struct
import sys
import warnings
from collections import deque

import numpy as np

from . import _cukit

FORMAT = "cukit-reproducer"
VERSION = 1
MANIFEST = "reproducer.json"
DEFAULT_LAST = 16
DEFAULT_BUDGET = 256 << 20


class ReproducerError(ValueError):
    """A reproducer folder that cannot be read: missing, damaged or edited by hand."""


# ------------------------------------------------------------------ capture

def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _is_ptx(image):
    head = bytes(image[:4])
    return not head.startswith(b"\x7fELF") and head != b"\x50\xed\x55\xba"


def _span(obj):
    """(lowest, highest) device address an argument can reach, its dtype string, and a
    note when its extent is unknown; None for an argument that is not device memory."""
    import cukit

    if isinstance(obj, cukit.Array):
        lo = hi = obj.ptr
        for n, s in zip(obj.shape, obj.strides):
            if n == 0:
                return obj.ptr, obj.ptr, obj.dtype.str, None
            if s >= 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi + obj.itemsize, obj.dtype.str, None
    if isinstance(obj, cukit.Buffer):
        return obj.ptr, obj.ptr + obj.nbytes, "|u1", None
    cai = getattr(obj, "__cuda_array_interface__", None)
    if isinstance(cai, dict):
        ptr = cai["data"][0]
        itemsize = np.dtype(cai["typestr"]).itemsize
        shape = tuple(cai["shape"])
        strides = cai.get("strides") or None
        if strides is None:
            strides, acc = [], itemsize
            for n in reversed(shape):
                strides.insert(0, acc)
                acc *= n
        lo = hi = ptr
        for n, s in zip(shape, strides):
            if n == 0:
                return ptr, ptr, cai["typestr"], None
            if s >= 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi + itemsize, cai["typestr"], None
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (bytes, bytearray, memoryview)):
        try:
            return _span(cukit.from_dlpack(obj))
        except Exception:
            return None
    return None


class _Recorder:
    """Keeps the launches of a capture. C calls record() before each launch and
    on_error() when the driver reports an error (see launch/capture.c, common/errors.c)."""

    def __init__(self, path, last, budget, every):
        self.path = os.path.abspath(os.fspath(path))
        self.last = last
        self.budget = budget
        self.every = every
        self.ring = deque()
        self.ring_bytes = 0
        self.pending = []      # launches since the last successful synchronize
        self.kernels = {}      # id(kernel) -> (kernel, info dict for the manifest)
        self.streams = {}      # CUstream handle -> order of first use
        self.count = 0         # launches recorded in all
        self.faults = 0
        self.written = None    # (ids of pending launches, folder) of the last fault written

    # -------------------------------------------------------------- per launch

    def _kernel(self, kernel):
        entry = self.kernels.get(id(kernel))
        if entry is None:
            entry = (kernel, self._describe(kernel))
            self.kernels[id(kernel)] = entry
        return entry[1]

    def _describe(self, kernel):
        info = _cukit._capture_kernel_info(kernel)
        image, prog = info["image"], info["program"]
        out = {"name": info["name"], "symbol": info["symbol"], "signature": info["signature"],
               "arch": info["arch"], "params": [list(p) for p in kernel.signature.params],
               "layout": [list(p) for p in kernel.signature.layout],
               "source": None, "source_name": None, "options": [], "name_expressions": [],
               "ptx": None, "cubin": None, "note": None}
        if prog is not None:
            out["source"] = prog.source
            out["source_name"] = prog.name
            out["options"] = list(prog.options)
            out["name_expressions"] = list(prog.name_expressions)
        if image is not None and _is_ptx(image):
            out["ptx"] = bytes(image).rstrip(b"\0")
        elif prog is not None:
            # Machine code runs only on its GPU: PTX with line information replays on any
            # GPU and on the emulator, which then names the source line.
            try:
                arch = "compute_" + info["arch"].split("_")[1]
                again = _cukit.Program(prog.source, name=prog.name, options=prog.options,
                                       name_expressions=prog.name_expressions or None,
                                       lineinfo=True)
                out["ptx"] = again.ptx(arch=arch)
            except Exception as e:  # the machine code still replays on its own GPU
                out["note"] = f"no PTX: {e}"
        if out["ptx"] is None and image is not None:
            out["cubin"] = bytes(image)
        if out["ptx"] is None and out["cubin"] is None:
            out["note"] = "the kernel's code was not kept (a module loaded another way)"
        return out

    def _read(self, cache, lo, n):
        key = (lo, n)
        if key not in cache:
            cache[key] = _cukit._capture_read(lo, n)
        return cache[key]

    def record(self, kernel, grid, block, shared, stream, args, packed):
        """Called by C before a launch: wait for the work before it, then keep the
        launch and its buffers' bytes."""
        import cukit

        cukit.synchronize()
        self.pending = []
        cache = {}
        info = self._kernel(kernel)
        launch = {"sequence": self.count, "kernel": id(kernel), "name": info["name"],
                  "grid": list(grid), "block": list(block), "shared_mem": shared,
                  "stream": self.streams.setdefault(stream, len(self.streams)),
                  "args": [], "regions": [], "data": False, "notes": [], "bytes": 0}
        self.count += 1
        spans = []
        for i, (off, size) in enumerate(info["layout"]):
            raw = bytes(packed[off:off + size])
            arg = {"param": i, "value": raw.hex()}
            launch["args"].append(arg)
            span = _span(args[i]) if size == 8 else None
            if isinstance(args[i], (cukit.Texture, cukit.Surface)):
                launch["notes"].append(f"argument {i + 1} is a {type(args[i]).__name__}: its "
                                       "handle is kept, not its array; a replay cannot use it")
            if span is not None:
                spans.append((span, i, int.from_bytes(raw, "little")))
            elif "*" in info["params"][i][0] or (size == 8 and isinstance(args[i], int)):
                launch["notes"].append(f"argument {i + 1} is an address whose extent is not "
                                       "known: its memory is not recorded")
        # Arguments that overlap share one region, so aliasing replays as it ran.
        spans.sort(key=lambda s: s[0][0])
        regions = launch["regions"]
        for (lo, hi, dtype, _), i, addr in spans:
            if regions and lo < regions[-1]["address"] + regions[-1]["nbytes"]:
                r = regions[-1]
                r["nbytes"] = max(r["nbytes"], hi - r["address"])
            else:
                regions.append({"address": lo, "nbytes": hi - lo, "dtype": dtype})
            launch["args"][i]["region"] = len(regions) - 1
            launch["args"][i]["offset"] = addr - regions[-1]["address"]
        need = sum(r["nbytes"] for r in regions)
        if need > self.budget:
            launch["notes"].append(f"its buffers ({need} bytes) exceed the capture's budget "
                                   f"({self.budget} bytes): recorded without their data")
        else:
            launch["data"] = True
            self._add_bytes(launch, [self._read(cache, r["address"], r["nbytes"])
                                     for r in regions], "before")
        self.pending.append(launch)
        self.ring.append(launch)
        launch["in_ring"] = True
        self.ring_bytes += launch["bytes"]
        self._trim()

    def _add_bytes(self, launch, blobs, when):
        added = 0
        for r, b in zip(launch["regions"], blobs):
            r[when] = b
            if b is not r.get("before" if when == "after" else "after"):
                added += len(b)
        launch["bytes"] += added
        if launch.get("in_ring"):
            self.ring_bytes += added
            self._trim()

    def _trim(self):
        if self.every:
            return
        while len(self.ring) > 1 and (len(self.ring) > self.last or self.ring_bytes > self.budget):
            old = self.ring.popleft()
            old["in_ring"] = False
            self.ring_bytes -= old["bytes"]

    def after(self):
        """Called by C after the launch: wait for it (its fault is raised here, naming its
        reproducer) and keep its buffers as it left them."""
        self.finish()

    def finish(self):
        """Wait for the launches not yet waited for and keep their outputs."""
        import cukit

        if not self.pending:
            return
        try:
            cukit.synchronize()
        except cukit.CudaError:
            # raised once, naming the reproducer on_error wrote: these launches are done
            # with, so leaving the capture after a handled fault does not raise it again
            self.pending = []
            raise
        cache = {}
        for launch in self.pending:
            if launch["data"]:
                self._add_bytes(launch, [self._read(cache, r["address"], r["nbytes"])
                                         for r in launch["regions"]], "after")
        self.pending = []

    # -------------------------------------------------------------- on a fault

    def on_error(self, message):
        """Called by C as a driver error is made: write the launches since the last
        successful synchronize and return the message naming them (None: no launch)."""
        if not self.pending:
            return None
        ids = [l["sequence"] for l in self.pending]
        if self.written is None or self.written[0] != ids:
            self.faults += 1
            sub = f"fault-{self.faults}"
            try:
                _write(self.path, self, self.pending, reason=str(message), sub=sub)
            except OSError as e:  # the driver's error is what the program must see
                return (f"{message}\n(cukit.debug.capture) the reproducer could not be "
                        f"written: {e}")
            self.written = (ids, os.path.join(self.path, sub))
        folder = self.written[1]
        names = ", ".join(f"{l['name']} (launch {l['sequence']})" for l in self.pending)
        return (f"{message}\n(cukit.debug.capture) the launch{'es' if len(ids) > 1 else ''} "
                f"since the last successful synchronize ({names}) {'are' if len(ids) > 1 else 'is'}"
                f" saved in {folder}; replay on the emulator, which names the faulting thread "
                f"and source line, with:\n    python -m cukit replay {folder} --backend emulator")


# ------------------------------------------------------------------ writing the folder
#
# The kernel cache's rules (csrc/sandbox/cachedir.c): a folder is used only when this
# user owns it and no one else can write to it; it is opened without following a
# link and made 0700 through its descriptor; files are created under a fresh name
# (O_EXCL, O_NOFOLLOW, 0600) and renamed over their name, so a link planted in the
# folder is replaced, never written through.

class _Unwritable(OSError):
    """A capture folder that cannot be written, with the reason in words."""


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_private_dir(path, dir_fd=None):
    """Open (creating it, 0700) the folder path, relative to dir_fd when given, and
    make it private; returns its descriptor. _Unwritable says why it cannot be used."""
    shown = path if dir_fd is None else f"{path} (in the capture folder)"
    try:
        if dir_fd is None:
            os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        try:
            os.mkdir(path, 0o700, dir_fd=dir_fd)
        except FileExistsError:
            pass
        fd = os.open(path, _OPEN_DIR, dir_fd=dir_fd)
    except OSError as e:
        try:  # O_DIRECTORY | O_NOFOLLOW on a link fails as ENOTDIR: tell them apart
            link = stat.S_ISLNK(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            link = False
        why = ("it is a symbolic link (not followed)" if link or e.errno == errno.ELOOP else
               "it is not a folder" if e.errno == errno.ENOTDIR else e.strerror or str(e))
        raise _Unwritable(f"{shown}: {why}") from None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise _Unwritable(f"{shown}: another user owns it; choose a folder of your own")
        if st.st_mode & 0o022:
            raise _Unwritable(f"{shown}: other users can write to it; `chmod 700 {path}` or "
                              "choose a folder of your own")
        os.fchmod(fd, 0o700)
    except _Unwritable:
        os.close(fd)
        raise
    except OSError as e:
        os.close(fd)
        raise _Unwritable(f"{shown}: {e.strerror or e}") from None
    return fd


def _private_file(dir_fd, name, data):
    """Write data as the file name in the folder dir_fd, mode 0600, replacing what was
    there (a link included) without writing through it."""
    tmp = f".{name}.{os.getpid()}.{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def _check_writable(path):
    """Make sure a capture can write into path (the folder, and a file in it); raises
    _Unwritable saying why not."""
    fd = _open_private_dir(path)
    try:
        _private_file(fd, ".cukit-capture-check", b"")
        os.unlink(".cukit-capture-check", dir_fd=fd)
    except OSError as e:
        raise _Unwritable(f"{path}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _write(folder, rec, launches, reason=None, sub=None):
    """Write launches (dicts of _Recorder.record) as a reproducer folder: folder itself,
    or its subfolder sub. Returns the folder written; OSError (_Unwritable: in words)
    where it cannot be."""
    import cukit

    fds = [_open_private_dir(folder)]
    try:
        if sub is not None:
            fds.append(_open_private_dir(sub, fds[0]))
        top = fds[-1]
        fds.append(_open_private_dir("kernels", top))
        kdir = fds[-1]
        fds.append(_open_private_dir("data", top))
        ddir = fds[-1]
        _write_into(top, kdir, ddir, rec, launches, reason, cukit)
    finally:
        for fd in fds:
            os.close(fd)
    return folder if sub is None else os.path.join(folder, sub)


def _write_into(top, kdir, ddir, rec, launches, reason, cukit):
    kernel_index, kernels = {}, []
    out_launches = []

    def blob(data):
        name = f"{_sha(data)}.bin"
        try:
            st = os.stat(name, dir_fd=ddir, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                return "data/" + name
        except FileNotFoundError:
            pass
        _private_file(ddir, name, data)
        return "data/" + name

    for n, launch in enumerate(launches):
        kid = launch["kernel"]
        if kid not in kernel_index:
            info = dict(rec.kernels[kid][1])
            i = len(kernels)
            for key, ext in (("ptx", "ptx"), ("cubin", "cubin")):
                if info[key] is not None:
                    _private_file(kdir, f"{i}.{ext}", info[key])
                    info[key + "_sha256"] = _sha(info[key])
                    info[key] = f"kernels/{i}.{ext}"
            if info["source"] is not None:
                _private_file(kdir, f"{i}.cu", info["source"].encode())
                info["source"] = f"kernels/{i}.cu"
            kernel_index[kid] = i
            kernels.append(info)
        regions = []
        for r in launch["regions"]:
            entry = {"nbytes": r["nbytes"], "dtype": r["dtype"], "before": None, "after": None}
            for when in ("before", "after"):
                if r.get(when) is not None:
                    entry[when] = blob(r[when])
            regions.append(entry)
        out_launches.append({
            "index": n, "sequence": launch["sequence"], "kernel": kernel_index[kid],
            "grid": launch["grid"], "block": launch["block"], "shared_mem": launch["shared_mem"],
            "stream": launch["stream"], "args": launch["args"], "regions": regions,
            "data": launch["data"], "notes": launch["notes"]})
    manifest = {
        "format": FORMAT, "version": VERSION, "created_by": f"cukit {cukit.__version__}",
        "backend": cukit.backend(), "python": sys.version.split()[0], "reason": reason,
        "kernels": kernels, "launches": out_launches}
    _private_file(top, MANIFEST, json.dumps(manifest, indent=1).encode())


# ------------------------------------------------------------------ the public calls

class capture:
    """capture(path, last=16, budget=256 MiB, every=False): record launches (a context
    manager; start()/stop() do the same by hand).

    Keeps the last `last` launches (all of them with every=True) and at most `budget`
    bytes of their buffers; a launch whose buffers alone exceed the budget is kept
    without its data and says so. Each launch waits for the work before it. A driver
    error after a launch writes the launches since the last successful synchronize to
    path/fault-N and names it in the exception; a capture that ends without one writes
    its launches, with their outputs, to path. The folders hold your arrays' data."""

    def __init__(self, path, last=DEFAULT_LAST, budget=DEFAULT_BUDGET, every=False):
        if not isinstance(last, int) or last < 1:
            raise ValueError(f"last={last!r}: keep at least 1 launch")
        if not isinstance(budget, int) or budget < 0:
            raise ValueError(f"budget={budget!r}: a number of bytes, 0 or more")
        self.recorder = _Recorder(path, last, budget, bool(every))
        self.path = self.recorder.path
        self.folder = None
        self.off = None  # why the capture records nothing (its folder cannot be written)

    def start(self):
        """Start recording. A folder that cannot be written is said once, as a
        RuntimeWarning, and the program runs unrecorded."""
        try:
            _check_writable(self.path)
        except OSError as e:
            self.off = str(e)
            warnings.warn(f"cukit.debug.capture records nothing: cannot write reproducers "
                          f"to {e}", RuntimeWarning, stacklevel=2)
            return self
        was = _cukit._capture_set(self.recorder)
        if was is not None:
            _cukit._capture_set(was)
            raise RuntimeError(f"a capture into {was.path} is already on; end it first")
        return self

    def stop(self, write=True):
        """End the capture; write its launches to path unless write=False. Returns the
        folder written, or None."""
        if self.off is not None:
            return None
        if _cukit._capture_set(None) is not self.recorder:
            raise RuntimeError("this capture is not the one on")
        if not write:
            return None
        self.recorder.finish()
        try:
            self.folder = _write(self.path, self.recorder, list(self.recorder.ring))
        except OSError as e:
            warnings.warn(f"cukit.debug.capture could not write its launches: {e}",
                          RuntimeWarning, stacklevel=2)
            return None
        return self.folder

    def __enter__(self):
        return self.start()

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.stop()
        else:
            self.stop(write=False)
        return False


def save_launch(kernel, *args, grid, block, shared_mem=0, stream=None, path):
    """Run one launch of kernel and write it, with its buffers before and after, as a
    reproducer folder at path (the format of capture). Returns path. A launch that
    faults is written without its outputs, and the exception names the folder."""
    rec = capture(path, every=True, budget=1 << 62)
    try:
        _check_writable(rec.path)
    except OSError as e:
        raise _Unwritable(f"save_launch cannot write a reproducer to {e}") from None
    rec.start()
    try:
        kernel(*args, grid=grid, block=block, shared_mem=shared_mem, stream=stream)
        rec.recorder.finish()
    except BaseException:
        _cukit._capture_set(None)
        raise
    _cukit._capture_set(None)
    return _write(rec.recorder.path, rec.recorder, list(rec.recorder.ring))


# ------------------------------------------------------------------ reading a folder

def _fail(path, what):
    raise ReproducerError(f"{path}: {what}")


def _need(cond, path, what):
    if not cond:
        _fail(path, what)


def _int_list(v, n):
    return isinstance(v, list) and len(v) == n and all(
        isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in v)


def _read_inside(folder, name, where):
    """The bytes of the file name ("data/x.bin") of the folder, never through a link
    (a reproducer's files are its own) nor from anything but a regular file."""
    fds = []
    try:
        try:
            fds.append(os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            *dirs, leaf = name.split("/")
            for d in dirs:
                fds.append(os.open(d, _OPEN_DIR, dir_fd=fds[-1]))
            fds.append(os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                               dir_fd=fds[-1]))
        except FileNotFoundError:
            _fail(folder, f"{where} names {name}, which is missing")
        except OSError as e:
            _fail(folder, f"{where} names {name}, which " + (
                "is, or is reached through, a symbolic link (not followed: a reproducer's "
                "files are its own)" if e.errno in (errno.ELOOP, errno.ENOTDIR) else
                f"cannot be read ({e.strerror})"))
        _need(stat.S_ISREG(os.fstat(fds[-1]).st_mode), folder,
              f"{where} names {name}, which is not a regular file")
        with os.fdopen(os.dup(fds[-1]), "rb") as f:
            return f.read()
    finally:
        for fd in fds:
            os.close(fd)


def _read_blob(folder, name, nbytes, where):
    _need(isinstance(name, str) and re.fullmatch(r"data/[0-9a-f]{64}\.bin", name), folder,
          f"{where} names {name!r}, not a data file (data/<sha256>.bin)")
    data = _read_inside(folder, name, where)
    _need(_sha(data) == name[5:-4], folder,
          f"{name} does not match its checksum: the file was changed or damaged")
    _need(len(data) == nbytes, folder, f"{where} says {nbytes} bytes but {name} has {len(data)}")
    return data


def load(path):
    """Read and check a reproducer folder; returns its manifest (dict) with the code and
    data files read in. ReproducerError names what is wrong."""
    folder = os.fspath(path)
    _need(os.path.exists(folder), folder, "no such folder")
    _need(os.path.isdir(folder), folder, "not a folder: a reproducer is a folder made by "
          "cukit.debug.capture or save_launch")
    mpath = os.path.join(folder, MANIFEST)
    _need(os.path.lexists(mpath), folder, f"no {MANIFEST}: not a cukit reproducer folder "
          "(made by cukit.debug.capture or save_launch)")
    try:
        text = _read_inside(folder, MANIFEST, "the folder").decode("utf-8")
        m = json.loads(text)
    except (ValueError, UnicodeDecodeError) as e:
        _fail(folder, f"{MANIFEST} is not valid JSON ({e}): the file was damaged or edited")
    except RecursionError:
        _fail(folder, f"{MANIFEST} is nested too deeply to be a reproducer: the file was "
              "damaged or edited")
    _need(isinstance(m, dict) and m.get("format") == FORMAT, folder,
          f"{MANIFEST} is not a cukit reproducer (its 'format' is not {FORMAT!r})")
    _need(isinstance(m.get("version"), int), folder, f"{MANIFEST} has no format version")
    _need(m["version"] <= VERSION, folder, f"format version {m['version']} is newer than this "
          f"cukit reads ({VERSION}); replay it with the cukit that wrote it "
          f"({m.get('created_by')}) or newer")
    kernels, launches = m.get("kernels"), m.get("launches")
    _need(isinstance(kernels, list) and isinstance(launches, list), folder,
          f"{MANIFEST} must have lists 'kernels' and 'launches'")
    for i, k in enumerate(kernels):
        where = f"kernels[{i}]"
        _need(isinstance(k, dict) and isinstance(k.get("symbol"), str) and
              isinstance(k.get("layout"), list), folder, f"{where} needs 'symbol' and 'layout'")
        for p in k["layout"]:
            _need(isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) and x >= 0
                                                              for x in p),
                  folder, f"{where}.layout must be [[offset, size], ...]")
        for key in ("ptx", "cubin"):
            name = k.get(key)
            if name is not None:
                _need(isinstance(name, str) and re.fullmatch(rf"kernels/\d+\.{key}", name),
                      folder, f"{where}.{key} names {name!r}, not a file in kernels/")
                k[key + "_bytes"] = _read_inside(folder, name, f"{where}.{key}")
                _need(_sha(k[key + "_bytes"]) == k.get(key + "_sha256"), folder,
                      f"{name} does not match its checksum ({where}.{key}_sha256): the file "
                      "was changed or damaged")
        params = k.get("params")
        _need(params is None or (isinstance(params, list) and all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and
            (p[1] is None or isinstance(p[1], str)) for p in params)), folder,
            f"{where}.params must be [[type, name or null], ...]")
        _need(k.get("ptx") or k.get("cubin"), folder,
              f"{where} ({k.get('name')}) has no code to load (no ptx or cubin)"
              + (f": {k['note']}" if k.get("note") else ""))
    for i, l in enumerate(launches):
        where = f"launches[{i}]"
        _need(isinstance(l, dict), folder, f"{where} is not an object")
        _need(isinstance(l.get("kernel"), int) and 0 <= l["kernel"] < len(kernels), folder,
              f"{where}.kernel must index 'kernels' (0 to {len(kernels) - 1})")
        _need(_int_list(l.get("grid"), 3) and _int_list(l.get("block"), 3), folder,
              f"{where}.grid and .block must be lists of 3 positive ints")
        _need(isinstance(l.get("shared_mem"), int) and l["shared_mem"] >= 0, folder,
              f"{where}.shared_mem must be an int >= 0")
        regions, args = l.get("regions"), l.get("args")
        layout = kernels[l["kernel"]]["layout"]
        _need(isinstance(regions, list) and isinstance(args, list) and len(args) == len(layout)
              and all(isinstance(a, dict) for a in args),
              folder, f"{where} must have 'regions' and one entry of 'args' per parameter "
              f"({len(layout)})")
        _need(isinstance(l.get("data", False), bool), folder, f"{where}.data must be true or false")
        for j, r in enumerate(regions):
            _need(isinstance(r, dict) and isinstance(r.get("nbytes"), int) and r["nbytes"] >= 0,
                  folder, f"{where}.regions[{j}] needs 'nbytes'")
            _need(not l.get("data") or r["nbytes"] == 0 or r.get("before") is not None, folder,
                  f"{where}.regions[{j}] has no 'before' data, which a launch recorded with its "
                  "data needs (the file was damaged or edited)")
            for when in ("before", "after"):
                if r.get(when) is not None:
                    r[when + "_bytes"] = _read_blob(folder, r[when], r["nbytes"],
                                                    f"{where}.regions[{j}].{when}")
        for j, a in enumerate(args):
            _need(isinstance(a, dict) and isinstance(a.get("value"), str), folder,
                  f"{where}.args[{j}] needs 'value' (hex bytes)")
            try:
                raw = bytes.fromhex(a["value"])
            except ValueError:
                _fail(folder, f"{where}.args[{j}].value is not hex")
            _need(len(raw) == layout[j][1], folder, f"{where}.args[{j}] has {len(raw)} bytes; "
                  f"the kernel's parameter {j + 1} has {layout[j][1]}")
            a["raw"] = raw
            a.setdefault("param", j)
            _need(isinstance(a.get("param", j), int) and not isinstance(a.get("param", j), bool)
                  and 0 <= a.get("param", j) < len(layout), folder,
                  f"{where}.args[{j}].param must index the kernel's parameters")
            if "region" in a:
                _need(isinstance(a["region"], int) and 0 <= a["region"] < len(regions) and
                      isinstance(a.get("offset"), int) and
                      0 <= a["offset"] <= regions[a["region"]]["nbytes"],
                      folder, f"{where}.args[{j}] names a region or offset that does not exist")
    # Each region's line in the manifest (as written: one "nbytes" line per region, in
    # order), which a replay names as the place its buffer was made.
    lines = [n + 1 for n, line in enumerate(text.splitlines()) if '"nbytes":' in line]
    regions = [r for l in launches for r in l["regions"]]
    for r, line in zip(regions, lines if len(lines) == len(regions) else []):
        r["line"] = line
    m["manifest_path"] = os.path.abspath(mpath)
    return m


# ------------------------------------------------------------------ replay

class ReplayResult:
    """What replay() found: .launches (indices run), .skipped (index, why),
    .first_difference (str or None), .compared (regions compared). Truthy when no
    output differed."""

    def __init__(self):
        self.launches, self.skipped, self.compared = [], [], 0
        self.first_difference = None

    def __bool__(self):
        return self.first_difference is None

    def summary(self):
        lines = [f"replayed {len(self.launches)} launch(es); compared {self.compared} "
                 "output buffer(s) with the recorded ones"]
        lines += [f"launch {i} not replayed: {why}" for i, why in self.skipped]
        lines.append(self.first_difference or "all outputs are identical to those recorded")
        return "\n".join(lines)


def _decode(ctype, raw):
    """A Python value for a typed parameter from its recorded bytes."""
    t = ctype.replace("const", "").strip()
    if "*" in t:
        return int.from_bytes(raw, "little")
    table = {"float": np.float32, "double": np.float64, "__half": np.float16,
             "half": np.float16}
    if t in table:
        return np.frombuffer(raw, table[t])[0]
    if t in ("__nv_bfloat16", "nv_bfloat16"):
        return struct.unpack("<f", b"\0\0" + raw)[0]  # bfloat16: a float32's high half
    if t == "bool":
        return bool(raw[0])
    signed = not (t.startswith("unsigned") or t.startswith("u") or t == "size_t")
    return int.from_bytes(raw, "little", signed=signed)


def _difference(index, name, arg_names, dtype, want, got):
    a = np.frombuffer(want, np.uint8)
    b = np.frombuffer(got, np.uint8)
    first = int(np.flatnonzero(a != b)[0])
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = np.dtype(np.uint8)
    if dt.itemsize == 0 or len(want) % dt.itemsize:
        dt = np.dtype(np.uint8)
    wv, gv = np.frombuffer(want, dt), np.frombuffer(got, dt)
    el = first // dt.itemsize
    ndiff = int(np.count_nonzero((a != b).reshape(-1, dt.itemsize).any(axis=1)))
    return (f"first difference: launch {index} ({name}), {arg_names}: element {el} "
            f"({dt.name}) recorded {wv[el]!r}, replayed {gv[el]!r}; {ndiff} of {len(wv)} "
            f"element(s) differ")


def replay(path, backend=None, launch=None, out=None):
    """Rebuild and run the launches of a reproducer folder; returns a ReplayResult.
    backend: "emulator" or "gpu" (set before any device is used; default: as now).
    launch: run only this launch index. A fault raises the driver's error (on the
    emulator it names the kernel, block, thread, allocation and source line)."""
    import cukit

    if backend not in (None, "emulator", "gpu"):
        raise ValueError(f"backend={backend!r}: choose 'emulator' or 'gpu'")
    m = load(path)
    if backend is not None:
        try:
            cukit.set_backend(backend)
        except Exception:
            if cukit.backend() != backend:  # a device was used already: too late to choose
                raise
    launches = m["launches"]
    if launch is not None:
        _need(isinstance(launch, int) and 0 <= launch < len(launches), os.fspath(path),
              f"there is no launch {launch}: the folder has launches 0 to {len(launches) - 1}")
        launches = [launches[launch]]
    was = _cukit._capture_set(None)  # never record a replay
    try:
        return _run(m, launches, out)
    finally:
        if was is not None:
            _cukit._capture_set(was)


# what a fault's message advises where no capture is on (csrc/driver/results.c)
_CAPTURE_ADVICE = " To save the launches that led here for replay, run with CUKIT_CAPTURE=DIR."


def _buffer_at(m, region):
    """The region's bytes on the device, allocated by code that says it runs at the
    manifest's line of the region: the emulator's fault messages name the line of
    Python that made an allocation, and in a replay that line is the manifest's."""
    code = compile("\n" * (region.get("line", 1) - 1) + "buffer = to_device(data)",
                   m["manifest_path"], "exec")
    scope = {"to_device": _cukit.to_device,
             "data": np.frombuffer(region["before_bytes"], np.uint8)}
    exec(code, scope)
    return scope["buffer"]


def _run(m, launches, out):
    import cukit

    result = ReplayResult()
    loaded = {}
    for l in launches:
        i = l.get("index", launches.index(l))
        k = m["kernels"][l["kernel"]]
        if not l.get("data"):
            result.skipped.append((i, "; ".join(l.get("notes") or ["recorded without data"])))
            continue
        if l["kernel"] not in loaded:
            code = k.get("ptx_bytes") or k.get("cubin_bytes")
            module = cukit.Module.load(code)
            try:
                loaded[l["kernel"]] = module.get_kernel(k["symbol"])
            except AttributeError as e:
                raise ReproducerError(f"kernels[{l['kernel']}]: its code has no kernel "
                                      f"{k['symbol']!r} ({e})") from None
        kern = loaded[l["kernel"]]
        bufs = [_buffer_at(m, r) if r["nbytes"] else None for r in l["regions"]]
        args = []
        for j, a in enumerate(l["args"]):
            if "region" in a and bufs[a["region"]] is not None:
                args.append((bufs[a["region"]].ptr + a["offset"]).to_bytes(8, "little"))
            else:
                args.append(a["raw"])
        params = kern.signature.params
        for j, v in enumerate(args):  # typed parameters (demangled C++ names) take values
            t = params[j][0] if j < len(params) else ""
            if not re.fullmatch(r"[usbf]\d+", t):
                args[j] = _decode(t, v)
        if out is not None:
            print(f"launch {i}: {k.get('name')} grid={tuple(l['grid'])} "
                  f"block={tuple(l['block'])} shared_mem={l['shared_mem']}", file=out)
        try:
            kern(*args, grid=tuple(l["grid"]), block=tuple(l["block"]),
                 shared_mem=l["shared_mem"])
            cukit.synchronize()
        except cukit.CudaError as e:
            where = ", ".join(
                f"{k['params'][a['param']][1] or 'argument %d' % (a['param'] + 1)} = "
                f"{bufs[a['region']].ptr + a['offset']:#x}"
                for a in l["args"] if "region" in a and bufs[a["region"]] is not None
                and a["param"] < len(k.get("params") or ()))
            text = str(e).replace(_CAPTURE_ADVICE, "")  # a replay is not captured
            e.args = (f"replaying launch {i} ({k.get('name')}): {text}"
                      + (f"\n(replay) the buffers' addresses: {where}" if where else ""),
                      ) + e.args[1:]
            raise
        result.launches.append(i)
        for j, r in enumerate(l["regions"]):
            if r.get("after_bytes") is None or bufs[j] is None:
                continue
            result.compared += 1
            got = bufs[j].get().tobytes()
            if got != r["after_bytes"] and result.first_difference is None:
                names = [k["params"][a["param"]][1] or f"argument {a['param'] + 1}"
                         for a in l["args"] if a.get("region") == j] if k.get("params") else []
                result.first_difference = _difference(
                    i, k.get("name"), "argument " + "/".join(repr(n) for n in names),
                    r.get("dtype") or "|u1", r["after_bytes"], got)
        if result.first_difference is not None:
            break
    return result


# ------------------------------------------------------------------ CUKIT_CAPTURE

_env_capture = None


def _capture_from_env(path):
    """CUKIT_CAPTURE=dir: capture the whole program; write at exit."""
    global _env_capture
    import atexit

    try:
        _check_writable(os.path.abspath(path))
    except OSError as e:
        print(f"cukit: CUKIT_CAPTURE records nothing: cannot write reproducers to {e}",
              file=sys.stderr)
        return
    _env_capture = capture(path).start()

    def end():
        if _cukit._capture_set(None) is _env_capture.recorder:
            try:
                _env_capture.recorder.finish()
                _write(_env_capture.path, _env_capture.recorder, list(_env_capture.recorder.ring))
            except Exception:
                pass  # after a fault the folder of the fault is what counts

    atexit.register(end)


# ------------------------------------------------------------------ the emulator's checkers

from ._checks import CheckReport, CheckWarning, check  # noqa: E402
