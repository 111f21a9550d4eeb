"""cukit.pycuda's modules import one way: each imports alone (in a fresh process), no
module imports one that imports it back (read from the source with ast, imports
inside functions included), and none rewrites a class (__bases__, __class__)."""
import ast
import os
import pathlib
import subprocess
import sys

import pytest

import cukit

PKG = pathlib.Path(cukit.__file__).resolve().parent / "pycuda"
SRC = PKG.parents[1]
MODULES = sorted(p.stem for p in PKG.glob("*.py"))
# pycuda.gl and pycuda.sparse are not provided: importing one raises ImportError saying so
REFUSED = {"gl", "sparse"}


def imports_of(name, text=None):
    """{module of the package that `name` imports: line}, read with ast (from `text`
    when given, else from the module's file)."""
    tree = ast.parse(text if text is not None else (PKG / f"{name}.py").read_text())
    found = {}
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                targets = [node.module.split(".")[0]] if node.module else \
                    [a.name for a in node.names]
            elif node.level == 0 and (node.module or "").startswith("cukit.pycuda"):
                parts = node.module.split(".")
                targets = parts[2:3] if len(parts) > 2 else [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".")[2] for a in node.names
                       if a.name.startswith("cukit.pycuda.")]
        for t in targets:
            if t in MODULES and t != name:
                found.setdefault(t, node.lineno)
    return found


def test_the_graph_reader_sees_every_form_of_import():
    text = ("from . import driver\nfrom .tools import x\nimport cukit.pycuda.compiler\n"
            "from cukit.pycuda import gpuarray\n"
            "def f():\n    from .reduction import y\n    from . import _texref as t\n")
    assert set(imports_of("curandom", text)) == {"driver", "tools", "compiler", "gpuarray",
                                                  "reduction", "_texref"}


def test_no_module_imports_one_that_imports_it_back():
    graph = {name: imports_of(name) for name in MODULES}
    cycles = []
    state = {}

    def visit(name, path):
        state[name] = "open"
        for dep in sorted(graph[name]):
            if state.get(dep) == "open":
                loop = path[path.index(dep):] + [dep]
                cycles.append(" -> ".join("%s (line %d)" % (a, graph[a][b])
                                          for a, b in zip(loop, loop[1:])))
            elif dep not in state:
                visit(dep, path + [dep])
        state[name] = "done"

    for name in MODULES:
        if name not in state:
            visit(name, [name])
    assert not cycles, "import loops in cukit.pycuda:\n" + "\n".join(cycles)


def test_no_module_rewrites_a_class():
    bad = []
    for name in MODULES:
        for node in ast.walk(ast.parse((PKG / f"{name}.py").read_text())):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and t.attr in ("__bases__", "__class__"):
                        bad.append("%s.py:%d: assigns %s" % (name, node.lineno, t.attr))
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", MODULES)
def test_each_module_imports_alone(name):
    env = dict(os.environ, PYTHONPATH=f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    code = f"import cukit.pycuda.{name}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    if name in REFUSED:
        assert out.returncode != 0 and "ImportError" in out.stderr and "not provided" in out.stderr
    else:
        assert out.returncode == 0, out.stderr[-3000:]
