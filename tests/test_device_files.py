"""The CUDA C of cukit's built-in kernels lives in csrc/<layer>/kernels/ (.cu, .cuh):
each file compiles on its own through NVRTC with the parameters its C side writes in
front of it (the file's `// params:` line gives a representative set), and the build
carries every file, as it is in the tree, into the module."""
import glob
import os
import re

import pytest

import cukit

ROOT = os.path.join(os.path.dirname(__file__), "..", "csrc")
FILES = sorted(os.path.relpath(p, ROOT).replace(os.sep, "/")
               for p in glob.glob(os.path.join(ROOT, "**", "kernels", "*.cu*"), recursive=True))
PARAMS = re.compile(r"^//\s*params:\s*(.*?)\s*(\(.*)?$", re.M)


def defines_of(path):
    """The `// params: A=1 B=float` line's defines, or none."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        m = PARAMS.search(f.read())
    if m is None:
        return {}
    return dict(kv.split("=", 1) for kv in m.group(1).split())


def test_the_build_carries_every_device_file():
    carried = cukit._cukit._device_files()
    assert sorted(carried) == FILES
    for name in FILES:  # the first line of each file is in its carried text
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            assert f.readline() in carried[name]


def test_a_missing_device_file_is_named():
    with pytest.raises(SystemError, match="nope/kernels/x.cu"):
        cukit._cukit._device_file_check("nope/kernels/x.cu")


@pytest.mark.parametrize("name", FILES)
def test_each_device_file_compiles_on_its_own(name):
    text = cukit._cukit._device_files()[name]
    prog = cukit.Program(text, name=os.path.basename(name), defines=defines_of(name))
    assert b".entry" in prog.ptx() or name.endswith(".cuh")
