"""src/cukit/_cukit.pyi describes every public name of the extension module."""
import ast
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import cukit
import cukit._cukit

STUB = pathlib.Path(cukit.__file__).resolve().parent / "_cukit.pyi"


def stub_names():
    tree = ast.parse(STUB.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_the_stub_names_exactly_the_module_names():
    runtime = {n for n in dir(cukit._cukit) if not n.startswith("__") or n == "__version__"}
    stub = {n for n in stub_names() if not n.startswith("_") or n in runtime}
    assert runtime - stub == set(), f"in cukit._cukit but not in {STUB.name}"
    assert stub - runtime == set(), f"in {STUB.name} but not in cukit._cukit"


def test_every_class_member_is_in_the_stub():
    tree = ast.parse(STUB.read_text())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    missing = []
    for name, cls in classes.items():
        declared = {m.name for m in cls.body if isinstance(m, ast.FunctionDef)}
        declared |= {m.target.id for m in cls.body if isinstance(m, ast.AnnAssign)}
        runtime = getattr(cukit._cukit, name)
        if issubclass(runtime, BaseException):
            continue
        for member in vars(runtime):
            if not member.startswith("_") and member not in declared:
                missing.append(f"{name}.{member}")
    assert not missing, f"not in {STUB.name}: {missing}"


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_stubtest_finds_the_stub_consistent(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(STUB.parent.parent), MYPY_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "mypy.stubtest", "cukit._cukit"], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
