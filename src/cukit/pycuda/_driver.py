"""pycuda._driver on cukit: PyCUDA's compiled module, whose names pycuda.driver
re-exports; here the same objects as cukit.pycuda.driver's (and the memory pool
helpers PyCUDA keeps in it), for programs that import it directly."""
from __future__ import annotations

from .driver import *  # noqa: F401,F403  (PyCUDA's names)
from .driver import (  # noqa: F401  (underscored or listed by PyCUDA's _driver)
    CUDA_DEBUGGING,
    Error,
    LogicError,
    MemoryError,
    RuntimeError,
)
from .tools import (  # noqa: F401
    DeviceMemoryPool,
    PageLockedMemoryPool,
    PooledDeviceAllocation,
    bitlog2,
)
