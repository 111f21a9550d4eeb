"""Sphinx configuration of cukit's documentation (Markdown pages through MyST).

Build: python -m sphinx -W --keep-going -b html docs OUTDIR (CI does, after installing
cukit). The API reference documents the installed package; where the extension module
cannot be imported (a checkout that was never built), `cukit` is read from src/, and
where it is not built there either, the reference page says so instead of failing.
Signatures of the extension's functions and methods come from src/cukit/_cukit.pyi.
"""
import ast
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")

try:
    import cukit  # noqa: F401  (the installed package: CI installs it before building)
except ImportError:
    sys.path.insert(0, SRC)

project = "cukit"
author = "the cukit authors"
copyright = "the cukit authors"
extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
html_theme = "alabaster"
suppress_warnings = ["image.not_readable"]  # none expected; kept out of -W by mistake only

# cukit's docstrings are plain text, not reStructuredText: each is shown as written (a
# literal block), so a `*`, a `|x|` or a backquote in one cannot break the build. The
# signatures come from __text_signature__ or the stubs, not from a docstring's first line.
autodoc_docstring_signature = False
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource"}
try:
    import cukit._cukit  # noqa: F401

    HAVE_EXTENSION = True
except ImportError:  # never built: cukit's package cannot be imported without it
    HAVE_EXTENSION = False


def _pyi_signatures():
    """{'compile': ('(source, ...)', 'Module'), 'Array.get': (...), ...} from _cukit.pyi."""
    path = os.path.join(SRC, "cukit", "_cukit.pyi")
    if not os.path.exists(path):
        import cukit as _c

        path = os.path.join(os.path.dirname(_c.__file__), "_cukit.pyi")
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = {}

    def fn(node, prefix):
        args = ast.unparse(node.args)
        if prefix and args.startswith("self"):
            args = args[len("self"):].lstrip(", ")
        ret = ast.unparse(node.returns) if node.returns is not None else None
        out.setdefault(prefix + node.name, (f"({args})", ret))

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            fn(node, "")
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef):
                    fn(sub, node.name + ".")
    return out


_SIGS = _pyi_signatures()


def _has_signature(obj):
    import inspect

    try:
        inspect.signature(obj)
        return True
    except (TypeError, ValueError):
        return False


def _docstring(app, what, name, obj, options, lines):
    """Show the docstring as written; where the object carries no signature of its own
    (a C function or method without __text_signature__), open it with the stubs' one."""
    head = []
    key = name[len("cukit."):] if name.startswith("cukit.") else None
    if what == "class" and key is not None:
        key += ".__init__"
    if key in _SIGS and not (callable(obj) and _has_signature(obj)):
        args, ret = _SIGS[key]
        short = name.rsplit(".", 1)[-1]
        head = [short + args + (" -> " + ret if ret and what != "class" else ""), ""]
    if lines or head:
        lines[:] = ["::", ""] + ["   " + s for s in head + lines] + [""]


def _source(app, docname, source):
    if docname == "api" and not HAVE_EXTENSION:
        head = source[0].split("```{eval-rst}")[0]
        source[0] = head.split("## cukit")[0] + (
            "This build of the documentation could not import cukit's extension module, "
            "so the reference is not here: build cukit first (`pip install .`, or "
            "`python setup.py build_ext --inplace -b src` in a checkout).\n")


def setup(app):
    app.connect("source-read", _source)
    app.connect("autodoc-process-docstring", _docstring)
