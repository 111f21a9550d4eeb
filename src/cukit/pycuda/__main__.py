"""python -m cukit.pycuda prog.py [args]   (or -m module [args], or -c code [args])

Runs an unmodified PyCUDA program on cukit: for this run only, an import hook
resolves `pycuda` and every `pycuda.*` module to cukit.pycuda's. Nothing is
installed, so a real PyCUDA imported in any other process is untouched.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

USAGE = """usage: python -m cukit.pycuda prog.py [args...]
       python -m cukit.pycuda -m module [args...]     (e.g. -m pytest test_driver.py)
       python -m cukit.pycuda -c code [args...]

Runs a PyCUDA program on cukit: `import pycuda...` gets cukit.pycuda's modules."""


class _AliasLoader(importlib.abc.Loader):
    """Loads `pycuda.X` as the already-importable module `cukit.pycuda.X` itself (the
    same object under both names, so classes and state are shared)."""

    def __init__(self, target):
        self.target = target
        self.own_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system has just set module.__spec__ to the alias's spec; put the
        # module's own back, or its later relative imports (`from .gpuarray import ...`
        # inside a function) see __package__ != __spec__.parent and raise ImportWarning,
        # an error under `python -W error`.
        if self.own_spec is not None:
            module.__spec__ = self.own_spec


class PycudaFinder(importlib.abc.MetaPathFinder):
    """Finds `pycuda` and `pycuda.*` in cukit.pycuda."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "pycuda" and not fullname.startswith("pycuda."):
            return None
        target_name = "cukit." + fullname
        found = importlib.util.find_spec(target_name)
        if found is None:
            return None
        return importlib.util.spec_from_loader(
            fullname, _AliasLoader(target_name),
            is_package=found.submodule_search_locations is not None)


def install():
    """Put the hook first on sys.meta_path (for this process). Returns the finder."""
    for f in sys.meta_path:
        if isinstance(f, PycudaFinder):
            return f
    finder = PycudaFinder()
    sys.meta_path.insert(0, finder)
    return finder


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if "pycuda" in sys.modules and not sys.modules["pycuda"].__name__.startswith("cukit."):
        print("cukit.pycuda: a real PyCUDA is already imported in this process",
              file=sys.stderr)
        return 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        if argv[1] == "pytest":  # PyCUDA's tests carry a `cuda` marker: register it
            sys.argv[1:1] = ["-p", "cukit.pycuda._pytest_plugin"]
        sys.path.insert(0, os.getcwd())
        name = argv[1]
        if name == "pycuda" or name.startswith("pycuda."):
            name = "cukit." + name  # -m pycuda.debug: run cukit.pycuda's module itself
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = ["-c"] + argv[2:]
        sys.path.insert(0, "")
        code = compile(argv[1], "<string>", "exec")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
    else:
        path = argv[0]
        if not os.path.exists(path):
            print("cukit.pycuda: no such file: %s" % path, file=sys.stderr)
            return 2
        sys.argv = argv
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
        runpy.run_path(path, run_name="__main__")
    return 0


if __name__ == "__main__":
    code = main()
    sys.exit(code)
