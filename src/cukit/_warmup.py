"""Pre-compiling array-math kernels: `python -m cukit warmup` and the tests.

A ufunc call compiles its kernel the first time a (ufunc, dtypes, layout class)
is met. This module lists the sources such calls would compile (through each
ufunc's `_source`, so they are byte-for-byte what a call builds) and compiles
them on several threads (NVRTC runs without the GIL), which fills cukit's
memory cache (same process) and disk cache (every later process)."""
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


def bar(done, total, out=sys.stderr, width=40):
    """A one-line progress bar."""
    filled = width * done // total
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} kernels")
    if done == total:
        out.write("\n")
    out.flush()
