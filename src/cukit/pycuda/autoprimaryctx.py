"""import pycuda.autoprimaryctx: the device's primary context made current, as
autoinit does (cukit always runs on primary contexts); retained until exit."""
from __future__ import annotations

import atexit

from . import driver as cuda
from .tools import make_default_context


def _push(ctx):
    ctx.push()
    return ctx


cuda.init()
context = make_default_context(lambda dev: _push(dev.retain_primary_context()))
device = context.get_device()


def _finish_up():
    global context
    if context is not None and cuda.Context.get_current() is context:
        context.pop()
    context = None


atexit.register(_finish_up)
