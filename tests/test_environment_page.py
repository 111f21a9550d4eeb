"""docs/environment.md lists every environment variable cukit reads: each read in csrc/,
src/ and setup.py (getenv in C; os.environ and os.getenv in Python) names a variable the
page lists, and every variable the page lists is read somewhere."""
import ast
import glob
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..")
PAGE = os.path.join(ROOT, "docs", "environment.md")
ROW = re.compile(r"^\|\s*`([A-Z][A-Z0-9_]*)`", re.M)
GETENV = re.compile(r"\bgetenv\s*\(\s*([^)]*)\)")
NAME = re.compile(r'"([A-Z][A-Z0-9_]*)"')


def listed():
    with open(PAGE, encoding="utf-8") as f:
        return set(ROW.findall(f.read()))


def c_reads():
    """{name: [where]} of every getenv in the C sources. A name read through an array
    (getenv(names[i])) is each string of that array; through a cukit_library's env
    field, each library's variable."""
    out, unknown = {}, []
    for path in sorted(glob.glob(os.path.join(ROOT, "csrc", "**", "*.[ch]"), recursive=True)):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        for m in GETENV.finditer(text):
            arg = m.group(1).strip()
            line = text.count("\n", 0, m.start()) + 1
            if arg.startswith('"'):
                names = NAME.findall(arg)
            elif re.fullmatch(r"\w+\[\w+\]", arg):
                table = re.search(r"\b%s\[\]\s*=\s*\{([^}]*)\}" % re.escape(arg.split("[")[0]), text)
                names = NAME.findall(table.group(1)) if table else []
            elif arg == "lib->env":
                names = [n for p in glob.glob(os.path.join(ROOT, "csrc", "**", "*.c"), recursive=True)
                         for n in re.findall(r"cukit_library \w+ = \{\s*\{[^}]*\},\s*\"(\w+)\"",
                                             open(p, encoding="utf-8").read())]
            else:
                names = []
            if not names:
                unknown.append(f"{rel}:{line}: getenv({arg})")
            for n in names:
                out.setdefault(n, []).append(f"{rel}:{line}")
    return out, unknown


def _is_environ(node):
    return isinstance(node, ast.Attribute) and node.attr == "environ"


def _constants(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant)]
    return []


def _name_values(tree, name):
    """What a variable used as a key can be: the constants a for loop or comprehension
    binds it to, or, for a function's parameter, the first argument of every call of
    that function in the module."""
    values = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name) \
                and node.target.id == name:
            values += _constants(node.iter)
        if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg == name:
            for call in ast.walk(tree):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                        and call.func.id == node.name and call.args:
                    values += _constants(call.args[0])
    return values


def py_reads():
    """{name: [where]} of every read of os.environ (get, [key], `in`) and os.getenv."""
    out, unknown = {}, []
    files = glob.glob(os.path.join(ROOT, "src", "**", "*.py"), recursive=True)
    for path in sorted(files + [os.path.join(ROOT, "setup.py")]):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        rel = os.path.relpath(path, ROOT)
        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and (
                    (node.func.attr == "get" and _is_environ(node.func.value)) or node.func.attr == "getenv"):
                key = node.args[0]
            elif isinstance(node, ast.Subscript) and _is_environ(node.value) \
                    and isinstance(node.ctx, ast.Load):
                key = node.slice
            elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
                key = node.left
            if key is None:
                continue
            names = _constants(key) or (_name_values(tree, key.id) if isinstance(key, ast.Name) else [])
            if not names:
                unknown.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            for n in names:
                out.setdefault(n, []).append(f"{rel}:{node.lineno}")
    return out, unknown


def test_every_variable_read_is_on_the_page():
    c, c_unknown = c_reads()
    py, py_unknown = py_reads()
    assert not c_unknown + py_unknown, (
        "reads of the environment whose variable this test cannot tell (name it in the call, "
        "or in an array the call indexes):\n" + "\n".join(c_unknown + py_unknown))
    page = listed()
    missing = {n: w for n, w in sorted({**c, **py}.items()) if n not in page}
    assert not missing, "docs/environment.md does not list: " + ", ".join(
        f"{n} (read at {w[0]})" for n, w in missing.items())


def test_every_variable_on_the_page_is_read():
    c, _ = c_reads()
    py, _ = py_reads()
    unread = sorted(listed() - set(c) - set(py))
    assert not unread, "docs/environment.md lists variables no code reads: " + ", ".join(unread)


def test_the_checks_see_each_kind_of_read():
    # the test's own guard: the forms it claims to find are found
    c, _ = c_reads()
    py, _ = py_reads()
    assert "CUKIT_BACKEND" in c          # getenv("...")
    assert "CUDA_HOME" in c              # getenv(envs[i])
    assert "CUKIT_CUBLAS" in c           # getenv(lib->env)
    assert "CUKIT_CAPTURE" in py         # os.environ.get / os.environ[...]
    assert "MASTER_PORT" in py           # a helper's parameter
    assert "WORLD_SIZE" in py            # "..." in os.environ
    assert "CUKIT_WERROR" in py          # setup.py
