"""import pycuda.autoinit: a context on device 0 (or $CUDA_DEVICE) is made
current; `context` and `device` name it. It is popped when the process exits."""
from __future__ import annotations

import atexit

from . import driver as cuda
from .tools import make_default_context

cuda.init()
context = make_default_context()
device = context.get_device()


def _finish_up():
    global context
    if context is not None and cuda.Context.get_current() is context:
        context.pop()
    context = None


atexit.register(_finish_up)
