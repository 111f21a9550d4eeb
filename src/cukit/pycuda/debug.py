"""import pycuda.debug: turns debugging on for this process, as PyCUDA's does. On
cukit that is cukit's debug mode (cukit.set_debug(True)): every launch waits for its
kernel, and a fault names the kernel, its grid and block and its arguments' types and
shapes, at the call that launched it. Slow; for finding a bug.

`python -m cukit.pycuda -m pycuda.debug prog.py [args]` runs prog.py so."""
from __future__ import annotations

import os
import runpy
import sys

from . import driver

driver.set_debugging()
print("cukit.pycuda: debugging on (each launch waits for its kernel; a fault names the "
      "kernel and its arguments)", file=sys.stderr)


def main(argv=None):
    """Run the program named by argv[0] (sys.argv[1:] by default) with debugging on."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m cukit.pycuda -m pycuda.debug SCRIPT-TO-RUN [SCRIPT-ARGUMENTS]",
              file=sys.stderr)
        return 2
    path = argv[0]
    if not os.path.exists(path):
        print("cukit.pycuda.debug: no such file: %s" % path, file=sys.stderr)
        return 1
    sys.argv = argv
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    runpy.run_path(path, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
