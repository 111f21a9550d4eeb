"""The architecture's guard: csrc/ is in layer folders, and no #include or call runs up.

Folders are layers, bottom to top (LAYERS). A file may include its own folder's
headers and the public header of its own layer or a lower one (PUBLIC); never a
higher layer's header, nor another folder's private header. No function or variable
that a higher layer exports is named, whatever its prefix (a lower layer reaches up
only through a hook the higher layer registers at init: cukit_state.hooks, each in
docs/architecture.md's hook table with who registers it, who calls it and why it
points up). C never calls cukit through Python objects.
"""
import pathlib
import re

import pytest

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"

# Bottom to top; folders in one tuple share a rank (they may include each other's
# public headers, never each other's private ones).
LAYERS = [
    ("common",),
    ("driver",),
    ("emulator",),
    ("runtime",),
    ("memory",),
    ("declarations",),
    ("sandbox",),
    ("launch",),
    ("compile",),
    ("array",),
    ("compute",),
    ("linalg", "sort", "fft"),
    ("nccl",),
    ("pycuda",),
]
RANK = {folder: rank for rank, group in enumerate(LAYERS) for folder in group}
TOP_RANK = len(LAYERS)  # csrc/cukitmodule.c: the module's init, above every layer
PUBLIC = {f"{folder}/{folder}.h" for group in LAYERS for folder in group}
MAX_HEADER_LINES = 300
MAX_SOURCE_LINES = 850

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def rank_of(path):
    rel = path.relative_to(CSRC)
    if len(rel.parts) == 1:
        return TOP_RANK
    return RANK[rel.parts[0]]


def sources():
    return sorted(p for p in CSRC.rglob("*") if p.suffix in (".c", ".h"))


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def test_every_folder_is_a_layer():
    folders = {p.name for p in CSRC.iterdir() if p.is_dir()}
    unknown = folders - set(RANK)
    assert not unknown, f"csrc/ folders not placed in LAYERS (tests/test_layers.py): {unknown}"
    loose = [p.name for p in CSRC.iterdir() if p.is_file() and p.name != "cukitmodule.c"]
    assert not loose, f"files directly in csrc/ besides cukitmodule.c: {loose}; put them in a layer"


# written by setup.py into the build folder, not part of the tree: the table of the
# device files (csrc/<layer>/kernels/) that common/device_files.c includes
GENERATED = {"device_files.inc"}


def test_no_include_runs_up_or_into_a_private_header():
    bad = []
    for path in sources():
        me = rank_of(path)
        folder = path.relative_to(CSRC).parts[0] if path.parent != CSRC else None
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            where = f"{path.relative_to(CSRC)}:{lineno}: #include \"{target}\""
            if target in GENERATED:
                continue
            if "/" not in target:
                bad.append(f"{where}: write includes from csrc/ (\"layer/file.h\")")
                continue
            if not (CSRC / target).exists():
                bad.append(f"{where}: no such header under csrc/")
                continue
            theirs = target.split("/")[0]
            if RANK[theirs] > me:
                bad.append(f"{where}: {theirs}/ is a higher layer than "
                           f"{folder or 'cukitmodule.c'}; register a hook instead")
            elif theirs != folder and target not in PUBLIC:
                bad.append(f"{where}: a private header of {theirs}/; include {theirs}/{theirs}.h")
    assert not bad, "\n".join(bad)


# Every function a file exports (not static), whatever its prefix (cukit_, and the
# emulator's emu_/ptx_, compute's ck_): its return type on the line above its name.
# Every name a file exports (not static), whatever its prefix (cukit_, and the
# emulator's emu_/ptx_, compute's ck_): functions and file-scope variables (tables,
# function pointers, counters), read from the file's top level.
ANY_NAME = re.compile(r"\b([A-Za-z_]\w*)\b")
# Programs of their own, not linked into the extension: their names are not its exports.
OWN_PROGRAMS = {"sandbox/worker_main.c"}


def top_level_statements(text):
    """The statements at a C file's top level (comments and strings stripped first):
    (kind, text) with kind "function" for a definition (its head, body dropped) and
    "declaration" for the rest, each with brace bodies cut to {}."""
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", "", strip_comments(text), flags=re.M)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "' '", text)  # '{' is no brace
    out, buf, depth, function = [], [], 0, False
    for ch in text:
        if ch == "{":
            if depth == 0:
                head = "".join(buf).strip()
                function = head.endswith(")") and "=" not in head
                buf.append("{}")
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and function:
                out.append(("function", "".join(buf)[:-2].strip()))
                buf, function = [], False
        elif depth == 0:
            if ch == ";":
                out.append(("declaration", "".join(buf).strip()))
                buf = []
            else:
                buf.append(ch)
    return out


def split_top(s, sep=","):
    """s split at `sep` outside (), [] and {}."""
    parts, depth, cur = [], 0, []
    for ch in s:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    return parts + ["".join(cur)]


def drop_macro_calls(stmt):
    """stmt without __attribute__((...)) and without the MACRO(...) invocations that
    open it (an X-macro expanded at the top level ends with no ';')."""
    stmt = re.sub(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)", " ", stmt)
    while True:
        m = re.match(r"\s*[A-Z_][A-Z0-9_]*\s*\(", stmt)
        if not m:
            return stmt.strip()
        depth, i = 0, m.end() - 1
        for i in range(m.end() - 1, len(stmt)):
            depth += {"(": 1, ")": -1}.get(stmt[i], 0)
            if depth == 0:
                break
        if not stmt[i + 1:].strip():
            return stmt.strip()
        stmt = stmt[i + 1:]


def names_exported_by(text):
    """Functions and variables a file defines without static (nor extern, typedef)."""
    names = []
    for kind, stmt in top_level_statements(text):
        stmt = drop_macro_calls(" ".join(stmt.split()))
        if not stmt or re.match(r"(static|extern|typedef)\b", stmt):
            continue
        if kind == "function":
            m = re.search(r"\b([A-Za-z_]\w*)\s*\(", stmt)
            if m:
                names.append(m.group(1))
            continue
        if re.fullmatch(r"(struct|union|enum)\s*\w*\s*(\{\})?", stmt) or stmt.startswith("_Static_assert"):
            continue
        for declarator in split_top(stmt):
            declarator = split_top(declarator, "=")[0]
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", declarator)
            if fp:  # a function pointer variable
                names.append(fp.group(1))
                continue
            if "(" in declarator:  # a prototype, not a definition
                continue
            words = ANY_NAME.findall(re.sub(r"\[[^\]]*\]", "", declarator))
            if words:
                names.append(words[-1])
    return names


def exported():
    defined = {}
    for path in CSRC.rglob("*.c"):
        if str(path.relative_to(CSRC)) in OWN_PROGRAMS:
            continue
        for name in names_exported_by(path.read_text()):
            defined[name] = path
    return defined


def test_exported_names_carry_their_layer_prefix():
    """An exported function or variable is named so that its home can be told from the name."""
    allowed = {"emulator": ("emu_", "ptx_", "cukit_"), "compute": ("ck_", "cukit_")}
    bad = []
    for name, path in sorted(exported().items()):
        folder = path.relative_to(CSRC).parts[0] if len(path.relative_to(CSRC).parts) > 1 else ""
        if path.parent == CSRC:
            continue  # the module's init (PyInit__cukit)
        if not name.startswith(allowed.get(folder, ("cukit_",))):
            bad.append(f"{path.relative_to(CSRC)}: {name} is exported without its prefix "
                       f"({' or '.join(allowed.get(folder, ('cukit_',)))}); make it static or "
                       f"rename it")
    assert not bad, "\n".join(bad)


def test_every_export_is_seen():
    """The reader above finds the exports the compiler makes: spot checks of each kind."""
    names = exported()
    for name in ("cukit_module_create",         # a function
                 "cukit_api",                   # a variable
                 "cukit_driver_entries",        # a table with an initializer
                 "cukit_driver_nentries"):      # a const
        assert name in names, f"{name} not read as exported; fix names_exported_by"
    assert "main" not in names  # the worker program's own


def test_no_call_runs_up():
    """No function or variable of a higher layer is named, under any prefix."""
    defined = exported()
    bad = []
    for path in sorted(CSRC.rglob("*.c")):
        me = rank_of(path)
        text = strip_comments(path.read_text())
        for lineno, line in enumerate(text.splitlines(), 1):
            for name in set(ANY_NAME.findall(line)):
                home = defined.get(name)
                if home is not None and home != path and rank_of(home) > me:
                    bad.append(f"{path.relative_to(CSRC)}:{lineno}: uses {name}, defined in the "
                               f"higher layer {home.relative_to(CSRC)}")
    assert not bad, "\n".join(bad)


def test_the_guard_catches_an_upward_call_under_any_prefix(tmp_path, monkeypatch):
    fake = tmp_path / "csrc"
    (fake / "runtime").mkdir(parents=True)
    (fake / "emulator").mkdir()
    (fake / "runtime" / "up.c").write_text("/* up.c - x */\nint\nemu_spin(void)\n{\n    return 0;\n}\n")
    (fake / "emulator" / "low.c").write_text(
        "/* low.c - x */\nint emu_table[4] = {1, 2};\nvoid\nemu_low(void)\n{\n    emu_spin();\n}\n")
    (fake / "runtime" / "reads.c").write_text("/* reads.c - x */\nstatic int f(void) { return 0; }\n")
    monkeypatch.setattr(__import__(__name__), "CSRC", fake)
    with pytest.raises(AssertionError, match=r"emulator/low.c:6: uses emu_spin, defined in the higher"):
        test_no_call_runs_up()
    with pytest.raises(AssertionError, match=r"runtime/up.c: emu_spin is exported without"):
        test_exported_names_carry_their_layer_prefix()
    assert set(exported()) == {"emu_spin", "emu_table", "emu_low"}


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(CSRC)))
def test_file_opens_with_its_purpose_and_stays_small(path):
    text = path.read_text()
    first = text.splitlines()[0] if text else ""
    assert first.startswith(f"/* {path.name} - "), \
        f"{path.relative_to(CSRC)} must open with its one-line purpose: /* {path.name} - ... */"
    limit = MAX_HEADER_LINES if path.suffix == ".h" else MAX_SOURCE_LINES
    lines = text.count("\n")
    assert lines <= limit, f"{path.relative_to(CSRC)} has {lines} lines; split it (limit {limit})"


def test_the_guard_catches_an_upward_include(tmp_path, monkeypatch):
    """The checks above would fail on a runtime/ file that includes array/array.h."""
    fake = tmp_path / "csrc"
    (fake / "runtime").mkdir(parents=True)
    (fake / "array").mkdir()
    (fake / "array" / "array.h").write_text("/* array.h - x */\n")
    (fake / "runtime" / "bad.c").write_text('/* bad.c - x */\n#include "array/array.h"\n')
    monkeypatch.setattr(__import__(__name__), "CSRC", fake)
    with pytest.raises(AssertionError, match=r"runtime/bad.c:2: .*array/ is a higher layer"):
        test_no_include_runs_up_or_into_a_private_header()


# ------------------------------------------------------------------ inside the emulator
#
# csrc/emulator/ is in folders by job, bottom to top (docs/architecture.md, "Inside
# the emulator"): its own root (the shared types and state.c), the PTX reader, the
# interpreter, the driver entry points. A file names only functions and variables of
# its own folder or of lower ones, and includes only their headers; and no two files
# call each other, however far round.
EMULATOR = ("", "ptx", "exec", "driver")


def emulator_group(path):
    """The rank of an emulator file's folder in EMULATOR (the root is "")."""
    rel = path.relative_to(CSRC / "emulator")
    return EMULATOR.index(rel.parts[0] if len(rel.parts) > 1 else "")


def emulator_calls():
    """(file, line, name, home) for each use, in an emulator .c file, of a name another
    emulator .c file exports."""
    defined = {name: home for name, home in exported().items()
               if home.is_relative_to(CSRC / "emulator")}
    out = []
    for path in sorted((CSRC / "emulator").rglob("*.c")):
        text = strip_comments(path.read_text())
        mine = set(names_exported_by(path.read_text()))
        statics = set(re.findall(r"\bstatic\b[^;{=(]*?\b(\w+)\s*[\[(=;]", text))
        for lineno, line in enumerate(text.splitlines(), 1):
            for name in set(ANY_NAME.findall(line)):
                home = defined.get(name)
                if home is not None and home != path and name not in mine | statics:
                    out.append((path, lineno, name, home))
    return out


def test_emulator_folders_are_placed():
    folders = {p.name for p in (CSRC / "emulator").iterdir() if p.is_dir()}
    unknown = folders - set(EMULATOR)
    assert not unknown, f"csrc/emulator/ folders not placed in EMULATOR (tests/test_layers.py): {unknown}"
    nested = [str(p.relative_to(CSRC)) for p in (CSRC / "emulator").rglob("*")
              if p.is_file() and len(p.relative_to(CSRC / "emulator").parts) > 2]
    assert not nested, f"emulator files nested deeper than one folder: {nested}"


def test_emulator_calls_and_includes_run_down_its_folders():
    bad = []
    for path, lineno, name, home in emulator_calls():
        if emulator_group(home) > emulator_group(path):
            bad.append(f"{path.relative_to(CSRC)}:{lineno}: uses {name}, defined in "
                       f"{home.relative_to(CSRC)}, a folder above it in the emulator")
    for path in sorted((CSRC / "emulator").rglob("*.[ch]")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1).startswith("emulator/") and (CSRC / m.group(1)).exists():
                if emulator_group(CSRC / m.group(1)) > emulator_group(path):
                    bad.append(f"{path.relative_to(CSRC)}:{lineno}: includes {m.group(1)}, "
                               f"a folder above it in the emulator")
    assert not bad, "\n".join(bad)


def test_emulator_files_call_each_other_in_no_circle():
    edges = {}
    for path, _, name, home in emulator_calls():
        edges.setdefault(path, {}).setdefault(home, name)
    # a depth-first walk: a file met again while still on the path closes a circle
    state, circles = {}, []

    def walk(node, trail):
        state[node] = 1
        for nxt, name in sorted(edges.get(node, {}).items()):
            if state.get(nxt) == 1:
                ring = trail[trail.index(nxt):] + [nxt]
                circles.append(" -> ".join(str(p.relative_to(CSRC)) for p in ring))
            elif nxt not in state:
                walk(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            walk(node, [node])
    assert not circles, "emulator files that call each other in a circle (pass the function " \
                        "down, as defer.c's queues take theirs):\n" + "\n".join(circles)


def test_the_emulator_guard_catches_an_upward_call_and_a_circle(tmp_path, monkeypatch):
    fake = tmp_path / "csrc"
    for folder in ("ptx", "driver"):
        (fake / "emulator" / folder).mkdir(parents=True)
    (fake / "emulator" / "driver" / "top.c").write_text(
        "/* top.c - x */\nint\nemu_top(void)\n{\n    return emu_low();\n}\n")
    (fake / "emulator" / "ptx" / "low.c").write_text(
        "/* low.c - x */\nint\nemu_low(void)\n{\n    return emu_top();\n}\n")
    monkeypatch.setattr(__import__(__name__), "CSRC", fake)
    with pytest.raises(AssertionError, match=r"emulator/ptx/low.c:5: uses emu_top, defined in "
                                             r"emulator/driver/top.c, a folder above"):
        test_emulator_calls_and_includes_run_down_its_folders()
    with pytest.raises(AssertionError, match=r"a circle.*\n.*low.c -> .*top.c -> .*low.c|"
                                             r"a circle.*\n.*top.c -> .*low.c -> .*top.c"):
        test_emulator_files_call_each_other_in_no_circle()


# ------------------------------------------------------------------ hooks

DOCS = CSRC.parent / "docs" / "architecture.md"
HOOK_FIELD = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")
REGISTRATION = re.compile(r"\bhooks\.(\w+)\s*=[^=]")
HOOK_USE = re.compile(r"\bhooks\.(\w+)\s*(?:\(|==|!=|&&|\)|\|\|)")


def hook_fields():
    text = (CSRC / "common" / "common.h").read_text()
    body = text[text.index("typedef struct {", text.index("hooks")):text.index("} cukit_hooks;")]
    return set(HOOK_FIELD.findall(strip_comments(body)))


def hook_table():
    """hook -> (registered by, called from, why it points up) from the architecture
    page's table: the files as written in backquotes."""
    out = {}
    for line in DOCS.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and re.fullmatch(r"`\w+`", cells[0]):
            files = lambda cell: set(re.findall(r"`([\w/]+\.[ch])`", cell))
            out[cells[0].strip("`")] = (cells[1].strip("`"), files(cells[2]), cells[4])
    return out


def test_every_hook_is_documented_where_it_is_registered():
    """Each field of cukit_hooks is in docs/architecture.md's hook table with the file
    that registers it, the files that call it and the reason it points up; none is
    registered or called elsewhere, and the table names no hook that is gone."""
    table = hook_table()
    fields = hook_fields()
    assert fields, "no hook fields found in common.h"
    missing = sorted(f for f in fields if f not in table)
    assert not missing, f"hooks not in docs/architecture.md's table: {missing}"
    bad = []
    registered = set()
    for path in sorted(CSRC.rglob("*.c")):
        rel = str(path.relative_to(CSRC))
        text = strip_comments(path.read_text())
        for name in REGISTRATION.findall(text):
            registered.add(name)
            if name not in fields:
                bad.append(f"{rel}: registers hooks.{name}, which cukit_hooks does not have")
            elif table[name][0] != rel:
                bad.append(f"{rel}: registers hooks.{name}; the architecture page says "
                           f"{table[name][0]} does")
        for name in set(HOOK_USE.findall(text)):
            if name in fields and rel not in table[name][1]:
                bad.append(f"{rel}: calls hooks.{name}; add it to the hook's 'called from' "
                           f"cell in docs/architecture.md")
    for name, (by, callers, why) in sorted(table.items()):
        if name in fields:
            if name not in registered:
                bad.append(f"hooks.{name} is registered nowhere: remove the field")
        elif not re.search(rf"\b{name}\s*\(", (CSRC / by).read_text() if (CSRC / by).exists() else ""):
            bad.append(f"docs/architecture.md lists the hook {name}, which is neither a field of "
                       f"cukit_hooks nor called in {by}: remove the row")
        if len(why) < 10:
            bad.append(f"docs/architecture.md: the hook {name} does not say why it points up")
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------ C calling cukit's Python
#
# C gets its work done by calling C: never by importing cukit's own Python package,
# calling one of cukit's types or module functions as Python objects, or calling a
# method cukit defines in C through Python's attribute lookup (each is a hook in
# disguise, and costs a Python call). PYTHON_CALLS_TO_REMOVE lists the files that
# still do, to be emptied: a new one fails, and so does one left listed after its
# call is gone.
PYTHON_CALLS_TO_REMOVE = set()
# Methods of other libraries' objects that cukit reads by name and also defines.
FOREIGN_METHODS = {"is_contiguous"}  # torch.Tensor's (nccl/collectives.c)
IMPORT_CUKIT = re.compile(r'PyImport_Import\w*\(\s*"cukit')
CALL_OBJECT = re.compile(r"\bPyObject_(?:Call\w*|Vectorcall\w*)\(\s*(?:\(PyObject\s*\*\)\s*)?"
                         r"(?:\w+(?:->|\.))+(\w+Type)\b")
BY_NAME = re.compile(r'\bPyObject_(?:GetAttrString|CallMethod\w*)\(\s*(?:\(PyObject\s*\*\)\s*)?'
                     r'([\w>.-]+)\s*,[^;"]*"(\w+)"')
MODULE_ARG = re.compile(r"\bPyModule_GetState\(\s*(\w+)\s*\)")
METHOD_NAME = re.compile(r'\{\s*"(\w+)"\s*,\s*\(\s*(?:PyCFunction|getter)\b|'
                         r'\{\s*"(\w+)"\s*,\s*\w+\s*,\s*METH_')


def strip_comments_only(text):
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"),
                                          text, flags=re.S))


def cukits_methods():
    """Names of every method and module function cukit defines in C."""
    names = set()
    for path in CSRC.rglob("*.c"):
        for a, b in METHOD_NAME.findall(strip_comments_only(path.read_text())):
            names.add(a or b)
    return {n for n in names if not n.startswith("__")}


def cukits_own_methods():
    """Names of the methods and module functions cukit defines in C that no numpy
    object has (so reading one by name off an object is a call into cukit)."""
    np = pytest.importorskip("numpy")
    names = cukits_methods()
    theirs = set(dir(np)) | set(dir(np.ndarray)) | set(dir(np.dtype)) | set(dir(np.generic))
    theirs |= set(dir(np.random.SeedSequence)) | set(dir(np.random.BitGenerator))
    return {n for n in names if n not in theirs | FOREIGN_METHODS and not n.startswith("__")}


# An object a function got from cukit's C: a variable declared of a cukit type, or
# assigned from an expression that calls an array function (cukit_array_*) or is a
# cast to a cukit type.
CUKIT_DECL = re.compile(r"\bcukit_[A-Z]\w*\s*\*\s*(\w+)")
CUKIT_ASSIGN = re.compile(r"\b(\w+)\s*=\s*([^;=][^;]*);")
CUKIT_SOURCE = re.compile(r"\bcukit_array_\w+\s*\(|^\s*\(\s*cukit_[A-Z]\w*\s*\*\s*\)")


def python_calls(path, own, methods=None):
    """What `path` calls of cukit through Python objects: (line, what) pairs. `own`:
    the methods cukit defines that numpy's objects lack (wrong by name on any object);
    `methods`: every method cukit defines (wrong by name on an object cukit's C made:
    a.fill(), a.reshape() of a cukit Array)."""
    methods = cukits_methods() if methods is None else methods
    lines = strip_comments_only(path.read_text()).splitlines()
    # Each function's lines (its head included), to know its module objects: the ones
    # it passes to PyModule_GetState, and a first parameter `PyObject *m`/`*module`.
    spans, start, depth = [], 0, 0
    for i, line in enumerate(lines):
        was = depth
        depth += line.count("{") - line.count("}")
        if was > 0 and depth == 0:
            spans.append((start, i + 1))
            start = i + 1
    spans.append((start, len(lines)))
    found = []
    for a, b in spans:
        body = "\n".join(lines[a:b])
        modules = set(MODULE_ARG.findall(body))
        modules |= set(re.findall(r"^\w+\(\s*PyObject\s*\*\s*(m|module)\b", body, re.M))
        ours = set(CUKIT_DECL.findall(body))
        ours |= {v for v, rhs in CUKIT_ASSIGN.findall(body) if CUKIT_SOURCE.search(rhs)}
        for lineno, line in enumerate(lines[a:b], a + 1):
            if IMPORT_CUKIT.search(line):
                found.append((lineno, "imports cukit's Python package"))
            for m in CALL_OBJECT.finditer(line):
                found.append((lineno, f"calls cukit's {m.group(1)} as a Python object"))
            for m in BY_NAME.finditer(line):
                obj, name = m.groups()
                if obj in modules:
                    found.append((lineno, f"reads cukit.{name} off the module"))
                elif name in own:
                    found.append((lineno, f"calls .{name}, which cukit defines in C, by name"))
                elif obj in ours and name in methods:
                    found.append((lineno, f"calls .{name} of an object cukit's C made, by name"))
    return found


def test_no_call_from_c_into_cukits_python():
    own = cukits_own_methods()
    found = {}
    for path in sorted(CSRC.rglob("*.c")):
        calls = python_calls(path, own)
        if calls:
            found[str(path.relative_to(CSRC))] = calls
    new = {f: c for f, c in found.items() if f not in PYTHON_CALLS_TO_REMOVE}
    assert not new, "C calls cukit through Python objects; call the C function instead:\n" + \
        "\n".join(f"{f}:{line}: {what}" for f, c in sorted(new.items()) for line, what in c)
    gone = PYTHON_CALLS_TO_REMOVE - set(found)
    assert not gone, f"no longer calls cukit through Python: take {sorted(gone)} off " \
                     "PYTHON_CALLS_TO_REMOVE"


def test_the_guard_catches_calls_through_python(tmp_path, monkeypatch):
    fake = tmp_path / "csrc"
    (fake / "array").mkdir(parents=True)
    (fake / "array" / "a.c").write_text(
        '/* a.c - x */\n'
        'static PyMethodDef m[] = {{"get_kernel", (PyCFunction)f, METH_O, ""},\n'
        '    {"fill", (PyCFunction)f, METH_O, ""}, {"reshape", (PyCFunction)f, METH_O, ""}};\n'
        'static PyObject *\nf(PyObject *m, PyObject *x)\n{\n'
        '    cukit_state *st = PyModule_GetState(m);\n'
        '    PyObject *a = PyImport_ImportModule("cukit._fuse");\n'
        '    PyObject *b = PyObject_CallFunction((PyObject *)st->ProgramType, "s", "");\n'
        '    PyObject *c = PyObject_GetAttrString(m, "empty");\n'
        '    PyObject *d = PyObject_CallMethod(x, "get_kernel", "s", "k");\n'
        '    PyObject *e = PyObject_CallMethod(x, "reshape", "n", 1);\n'
        '    PyObject *g = cukit_array_shaped(st, x, x, x, 0);\n'
        '    PyObject *h = PyObject_CallMethod(g, "fill", "O", x);\n'
        '    cukit_Array *k = cukit_array_copy((cukit_Array *)x);\n'
        '    PyObject *l = PyObject_CallMethod((PyObject *)k, "reshape", "n", -1);\n'
        '    return a;\n}\n')
    monkeypatch.setattr(__import__(__name__), "CSRC", fake)
    calls = [line for line, _ in python_calls(fake / "array" / "a.c", cukits_own_methods())]
    # not 12: numpy arrays have reshape too, and x may be one; 14 and 16: a cukit Array's
    assert calls == [8, 9, 10, 11, 14, 16]
