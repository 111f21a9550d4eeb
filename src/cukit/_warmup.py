"""Pre-compiling cukit's own kernels: `python -m cukit warmup` and the tests.

A ufunc call compiles its kernel the first time a (ufunc, dtypes, layout class)
is met. This module lists the sources such calls would compile (through each
ufunc's `_source`, so they are byte-for-byte what a call builds) and compiles
them on several threads (NVRTC runs without the GIL), which fills cukit's
memory cache (same process) and disk cache (every later process).

The other families (reductions and scans, random draws, sorts, the GEMM that
matmul runs without cuBLAS) build their sources inside C: they are warmed by
calling them, on tiny arrays of the current device, so each compiles exactly what a
program's first call would; the calls run on the same threads."""
import concurrent.futures
import os
import sys

import numpy as np

from . import _cukit

COMMON = ("bool", "int8", "uint8", "int16", "int32", "int64", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128")
CLASS_VEC, CLASS_FLAT = 0, 1


def ufuncs():
    """Every distinct public ufunc, by name."""
    seen = {}
    for name, f in vars(_cukit).items():
        if isinstance(f, _cukit.ufunc) and f.__name__ == name:
            seen[name] = f
    return seen


def contiguous_class(itemsizes):
    """(class, vector width) a contiguous, aligned call of these element sizes gets."""
    widest = max(itemsizes)
    vec = 1 if widest >= 16 else 16 // widest
    return (CLASS_VEC, vec) if vec > 1 else (CLASS_FLAT, 1)


def job(ufunc, inputs, scalars=None, out=None):
    """What a contiguous call of ufunc on arrays of dtypes `inputs` compiles (a scalar
    where scalars[k] is true, given as its loop dtype)."""
    inputs = [np.dtype(t) for t in inputs]
    scalars = list(scalars or [False] * len(inputs))
    loops, result = ufunc.resolve(*inputs)
    out = np.dtype(out) if out is not None else result
    sizes = [out.itemsize] + [d.itemsize for d, s in zip(inputs, scalars) if not s]
    cls, vec = contiguous_class(sizes)
    types = [lt if s else d for d, lt, s in zip(inputs, loops, scalars)]
    return ufunc, tuple(types), tuple(scalars), None if out == result else out, cls, vec


def source(j):
    ufunc, types, scalars, out, cls, vec = j
    return ufunc._source(types, scalars=scalars, out=out, cls=cls, vec=vec)


def common_jobs(dtypes=COMMON, with_scalars=True):
    """Every ufunc on same-dtype contiguous arrays of each dtype it takes, and binary
    ones with a Python scalar second operand."""
    jobs = []
    for f in ufuncs().values():
        for name in dtypes:
            try:
                jobs.append(job(f, [name] * f.nin))
                if with_scalars and f.nin == 2:
                    jobs.append(job(f, [name] * 2, [False, True]))
            except TypeError:
                pass  # no loop for this dtype
    return list(dict.fromkeys(jobs))


def compile_jobs(jobs, device=None, arch=None, threads=None, progress=None):
    """Compile each job's source: loaded on `device` (None: the current one) when a GPU
    is there, else to a cubin for `arch`. progress(done, total) after each. Returns
    the number compiled; raises the first failure."""
    sources = list(dict.fromkeys(source(j) for j in jobs))
    threads = threads or min(32, os.cpu_count() or 1)

    def one(s):
        src, name, opts = s
        if arch is None:
            _cukit.compile(src, name=name, options=opts, device=device)
        else:
            _cukit.Program(src, name=name, options=opts).cubin(arch=arch)

    done = 0
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        for fut in concurrent.futures.as_completed([ex.submit(one, s) for s in sources]):
            fut.result()
            done += 1
            if progress:
                progress(done, len(sources))
    return len(sources)


# Each reduction kernel is compiled alone at its first use, for the layout a call has:
# these calls meet every one (a short and a long whole run; rows short and long, aligned
# or not, and split; columns, a vector of them or not).
LAYOUTS = (((37,), None), ((5000,), None), ((5, 37), 1), ((3, 2049), 1), ((4, 4096), 1),
           ((2, 40000), 1), ((64, 32), 0), ((64, 33), 0))
REDUCTIONS = ("sum", "prod", "mean", "var", "std", "min", "max", "argmin", "argmax", "any", "all",
              "count_nonzero", "nansum", "cumsum", "cumprod")


def family_calls(dtypes=COMMON):
    """{group: [(what, call)]}: a call of each reduction and scan, sort, random draw and
    matmul a program is likely to make first, on tiny contiguous arrays of each dtype
    (whole-array reductions, and along the last axis of a 2-D array); each call compiles
    what the same call of a program compiles. A group runs in a process of its own:
    reductions share passes (std's and var's first is mean's), and a pass met first in
    the process under another's name is not compiled, so not cached, under this one's."""
    import cukit
    import cukit.random

    groups = {}

    def add(group, what, fn):
        groups.setdefault(group, []).append((what, fn))

    for name in dtypes:
        dt = np.dtype(name)
        for op in REDUCTIONS:
            f = getattr(cukit, op)
            add(op, f"{op}({name})", lambda f=f, dt=dt: [f(cukit.ones(shape, dt), axis=axis)
                                                         for shape, axis in LAYOUTS])
        if dt.kind in "biuf":
            add("sort", f"sort({name})", lambda dt=dt: (
                cukit.sort(cukit.ones(300, dt)), cukit.argsort(cukit.ones(3000, dt)),
                cukit.searchsorted(cukit.ones(8, dt), cukit.ones(3, dt)),
                cukit.unique(cukit.ones(8, dt))))
        if dt.kind in "fc" and dt.itemsize >= 4:
            add("matmul", f"matmul({name})", lambda dt=dt: cukit.matmul(
                cukit.ones((8, 8), dt), cukit.ones((8, 8), dt)))
    # each random kernel is compiled alone at its first draw: every one, by name
    for kernel in _cukit._random_kernels():
        add("random", kernel, lambda kernel=kernel: _cukit._random_kernels(kernel))
    return groups


# Groups whose calls share nothing: their child runs them on threads (NVRTC runs
# without the GIL).
THREADED = ("random",)


def _run_group(group, dtypes):
    """In a warmup's child process: run the group's calls, a line "done" after each (a
    call cukit refuses for its dtype is skipped; any other error ends the process)."""
    def one(item):
        what, call = item
        try:
            call()
        except (TypeError, ValueError):
            pass
        return what

    calls = family_calls(dtypes)[group]
    threads = min(32, os.cpu_count() or 1) if group in THREADED else 1
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        for what in ex.map(one, calls):
            print("done", what, flush=True)


def run_groups(dtypes, threads=None, progress=None, offset=0, total=None, only=None):
    """Run family_calls(dtypes)'s groups (those named in `only`, when given), each in a
    child process, `threads` at a time. progress(done, total) after each call. Returns
    the calls run; raises RuntimeError with a child's last words where one fails."""
    import subprocess
    import threading

    groups = {g: len(c) for g, c in family_calls(dtypes).items() if only is None or g in only}
    threads = threads or min(32, os.cpu_count() or 1)
    total = total or sum(groups.values())
    lock = threading.Lock()
    done = [offset]

    def one(group):
        code = (f"from cukit import _warmup; _warmup._run_group({group!r}, {tuple(dtypes)!r})")
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        for line in proc.stdout:
            if line.startswith("done"):
                with lock:
                    done[0] += 1
                    if progress:
                        progress(done[0], total)
        err = proc.stderr.read()
        if proc.wait() != 0:
            raise RuntimeError(f"warming {group} failed: {err.strip().splitlines()[-1:]}")
        return groups[group]

    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        return sum(f.result() for f in [ex.submit(one, g) for g in groups])


def bar(done, total, out=sys.stderr, width=40):
    """A one-line progress bar."""
    filled = width * done // total
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} kernels")
    if done == total:
        out.write("\n")
    out.flush()
