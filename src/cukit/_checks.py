"""The emulator's checkers (cukit.debug.check): racecheck, initcheck and synccheck.

The checks themselves are C (csrc/emulator/exec/access.c, grid.c, warp.c); a launch
reads which are on once, as its blocks start, so with none on nothing else runs. This
module turns them on for a block of code and hands back what they found.
"""
import collections
import warnings

from . import _cukit

__all__ = ["CheckReport", "CheckWarning", "check"]

_BITS = {"race": 1, "racecheck": 1, "init": 2, "initcheck": 2, "sync": 4, "synccheck": 4,
         "all": 7}

CheckReport = collections.namedtuple("CheckReport", "checker message count")
CheckReport.__doc__ = """One place where a checker found a problem.

checker: ``"racecheck"``, ``"initcheck"`` or ``"synccheck"``; message: what was found,
naming the kernel, block, thread, source line (and for a race the other thread and its
line, for a read of unwritten memory the allocation and offset); count: how many times
it was met there (threads and launches)."""
CheckReport.__module__ = "cukit.debug"


class CheckWarning(UserWarning):
    """What the emulator's checkers found inside a ``cukit.debug.check()`` block: one
    warning per checker that found something, with the count and the first message."""


CheckWarning.__module__ = "cukit.debug"

_open = []  # the check() blocks open now, innermost last


def _take():
    reports, dropped = _cukit._emulator_check_reports()
    found = [CheckReport(*r) for r in reports]
    if dropped:
        found.append(CheckReport("checks", f"{dropped} more reports were dropped (the log keeps "
                                           "4096 places)", dropped))
    return found


class check:
    """Run the emulator's checkers over a block of code::

        with cukit.debug.check("race", "init", "sync") as found:   # check(): all three
            run_my_kernels()
        found.reports   # [CheckReport(checker, message, count), ...]

    ``race`` (racecheck): two threads of a block that access one byte of shared (or
    global) memory, one of them writing, with no barrier between them
    (``__syncthreads()``, or ``__syncwarp()`` for threads of one warp). ``init`` (initcheck): a kernel that reads
    device memory no copy, memset or kernel has written (memory allocated inside the
    block). ``sync`` (synccheck): a ``__syncthreads()`` that part of the block never
    reaches, or that the threads of a warp reach at two places, and a ``__syncwarp(mask)``
    whose mask leaves out the calling thread or names threads that have exited.

    Each place is reported once, with a count. At the end of the block the device is
    synchronized, the reports are in ``reports``, and each checker that found something
    gives one ``CheckWarning``. The checkers are the emulator's: on a GPU, use NVIDIA's
    compute-sanitizer (``--tool racecheck``, ``initcheck``, ``synccheck``).
    ``CUKIT_EMULATOR_CHECK=race,init,sync`` (or ``all``) turns them on for a whole
    program, which prints each report on stderr as it is found.
    """

    def __init__(self, *checkers):
        bits = 0
        for name in checkers or ("all",):
            if not isinstance(name, str) or name.lower() not in _BITS:
                raise ValueError(f"cukit.debug.check: {name!r} is not a checker; the checkers are "
                                 "'race', 'init', 'sync' and 'all'")
            bits |= _BITS[name.lower()]
        self._bits = bits
        self._before = None
        self.reports = []

    def __enter__(self):
        import cukit

        if cukit.backend() != "emulator":
            raise cukit.NotSupportedError(
                "cukit.debug.check: the checkers are the emulator's (CUKIT_BACKEND=emulator); on "
                "a GPU, run the program under compute-sanitizer --tool racecheck (or initcheck, "
                "synccheck)")
        cukit.synchronize()
        earlier = _take()
        if _open:
            _open[-1].reports.extend(earlier)
        before = _cukit._emulator_check(self._bits)
        _cukit._emulator_check(before | self._bits)
        self._before = before
        _open.append(self)
        return self

    def __exit__(self, kind, value, tb):
        import cukit

        try:
            if kind is None:
                cukit.synchronize()
        finally:
            _cukit._emulator_check(self._before)
            _open.remove(self)
            self.reports.extend(_take())
        if kind is None:
            by = collections.defaultdict(list)
            for r in self.reports:
                by[r.checker].append(r)
            for checker, found in by.items():
                total = sum(r.count for r in found)
                warnings.warn(f"{checker}: {total} reports at {len(found)} places; the first: "
                              f"{found[0].message}", CheckWarning, stacklevel=2)
        return False


check.__module__ = "cukit.debug"
