"""PyCUDA's exception classes (pycuda.driver.Error and its subclasses), and the
layer's edge: a cukit error raised inside cukit.pycuda leaves it as an instance of a
class that derives from both the PyCUDA class and the cukit class it came as, so
`except pycuda.driver.LogicError` and `except cukit.InvalidValueError` both catch it.

cukit's own classes are left as they are: outside the layer, cukit raises cukit's
classes only.
"""
from __future__ import annotations

import builtins
import functools

import cukit
from cukit import _cukit


class Error(cukit.CudaError):
    """Base of PyCUDA's errors (also a cukit.CudaError)."""


class LogicError(Error):
    """A call that cannot succeed as made: invalid value, context or handle."""


class LaunchError(Error):
    """A kernel launch failed, or a kernel faulted."""


class RuntimeError(Error):
    """A driver failure that is not the caller's logic error."""


class MemoryError(Error, builtins.MemoryError):
    """Out of device or host memory."""


class CompileError(Error):
    """The source did not compile. `stderr` holds the compiler's log."""

    def __init__(self, msg, command_line=None, stdout=None, stderr=None):
        super().__init__(msg)
        self.msg = msg
        self.command_line = command_line
        self.stdout = stdout
        if stderr is not None:
            self.log = stderr

    @property
    def stderr(self):
        return getattr(self, "log", "")


# cukit's class -> the PyCUDA class its errors take at the layer's edge
_PYCUDA_CLASS = [
    (cukit.InvalidValueError, LogicError),
    (cukit.NotSupportedError, LogicError),
    (cukit.LaunchError, LaunchError),
    (cukit.KernelFaultError, LaunchError),
    (cukit.OutOfMemoryError, MemoryError),
    (cukit.NoDeviceError, RuntimeError),
    (cukit.LinkError, CompileError),
    (cukit.CompileError, CompileError),
    (cukit.CudaError, RuntimeError),
]


def _both(cukit_class, pycuda_class):
    return type(cukit_class.__name__, (pycuda_class, cukit_class),
                {"__module__": __name__, "__doc__": "%s raised inside cukit.pycuda: also a %s."
                 % (cukit_class.__name__, pycuda_class.__name__)})


_EDGE = {c: _both(c, p) for c, p in _PYCUDA_CLASS}


def at_edge(e):
    """The exception to raise for cukit error e leaving the layer: e itself when it is
    already one of the layer's, else a copy of it (arguments, attributes, cause,
    traceback) whose class derives from both the PyCUDA class and e's class."""
    if isinstance(e, Error):
        return e
    cls = None
    for klass in type(e).__mro__:
        cls = _EDGE.get(klass)
        if cls is not None:
            break
    if cls is None:
        return e
    new = cls.__new__(cls, *e.args)
    new.args = e.args
    new.__dict__.update(getattr(e, "__dict__", {}))
    new.__cause__ = e.__cause__
    new.__suppress_context__ = e.__suppress_context__
    return new.with_traceback(e.__traceback__)


def edge(f):
    """f, whose cukit errors leave as the layer's classes (at_edge)."""
    @functools.wraps(f)
    def at_the_edge(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except cukit.CudaError as e:
            new = at_edge(e)
            if new is e:
                raise
            raise new from e.__cause__
    return at_the_edge


_cukit._PycudaFunction._register(at_edge)  # the C calls' edge
