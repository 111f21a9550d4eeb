"""cukit.lib: the parts of numpy.lib that numpy and CuPy users import by path
(``from cukit.lib.stride_tricks import sliding_window_view``)."""
from . import stride_tricks

__all__ = ["stride_tricks"]
